import sys, json, hashlib, subprocess, os
from dataclasses import asdict
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[4])); sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parent))
from transforms.problem import Gemm, input_shapes
from pipelines.bench import repeat_count
from pipelines.targets import get_target
import genm
t=get_target("sm_80")
from pipelines.compiler import iree_compile_path  # noqa: E402
IC = iree_compile_path()
plan=sys.argv[1]; os.makedirs(plan+'/cases',exist_ok=True)
def body_nt(M,N,K,S,info):
    b=genm.body(M,N,K,S,info)
    Kc=K//S
    b=b.replace(f"%b: tensor<{K}x{N}xbf16>",f"%b: tensor<{N}x{K}xbf16>")
    b=b.replace(f"%b3 = tensor.expand_shape %b [[0, 1], [2]] output_shape [{S}, {Kc}, {N}] : tensor<{K}x{N}xbf16> into tensor<{S}x{Kc}x{N}xbf16>",
                f"%b3 = tensor.expand_shape %b [[0], [1, 2]] output_shape [{N}, {S}, {Kc}] : tensor<{N}x{K}xbf16> into tensor<{N}x{S}x{Kc}xbf16>")
    b=b.replace("#map_b = affine_map<(s, m, n, k) -> (s, k, n)>","#map_b = affine_map<(s, m, n, k) -> (n, s, k)>")
    b=b.replace(f"tensor<{S}x{Kc}x{N}xbf16>) outs",f"tensor<{N}x{S}x{Kc}xbf16>) outs")
    return b
variants=[]
for m,(wm,wn,gm,gn,kt) in ((64,(64,128,2,2,64)),(128,(128,128,2,2,64))):
    for n,k,S in ((8192,8192,8 if m==64 else 4),(14336,4096,4),(4096,14336,16 if m==64 else 8)):
        for lay in ("nn","nt"):
            for prom in ("[0, 1]","[0]"):
                info=genm.mma(wm,wn,gm,gn,kt).replace("promote_operands = [0, 1]",f"promote_operands = {prom}")
                src=(genm.body if lay=="nn" else body_nt)(m,n,k,S,info)
                variants.append((m,n,k,lay,f'mma S{S} {wm}x{wn} k{kt} promote {prom}',src))
entries=[]; seen=set()
for m,n,k,lay,name,src in variants:
    g=Gemm(m=m,n=n,k=k,dtype="bf16",layout=lay)
    rep=repeat_count(g,t)
    ident=hashlib.sha256(json.dumps([m,n,k,lay,name]).encode()).hexdigest()[:16]
    d=f'{plan}/cases/{ident}'; os.makedirs(d,exist_ok=True)
    e={"id":ident,"label":f"bf16 {g.shape_name} {lay} {name}","problem":asdict(g),"pipeline":"default","schedule":name,
       "schedule_fields":None,"target":t.name,"flops":g.flops,"repeat":rep,"function":"gemm",
       "input_shapes":[list(s) for s in input_shapes(g)],"input_dtypes":["bf16","bf16"],"vmfb":f"cases/{ident}/gemm.vmfb","status":"ok","vendor":(g not in seen)}
    seen.add(g)
    open(d+'/gemm.mlir','w').write(src)
    r=subprocess.run([IC,d+'/gemm.mlir','--iree-hal-target-device=cuda','--iree-cuda-target=sm_80',f'--iree-hal-benchmark-dispatch-repeat-count={rep}','-o',d+'/gemm.vmfb','--iree-hal-dump-executable-files-to='+d+'/dump'],capture_output=True,text=True)
    if r.returncode: e.update(status="compile-failed",error=r.stderr[-300:],vmfb=None); print("FAIL",e['label'],r.stderr[-200:])
    entries.append(e)
json.dump({"target":t.name,"cases":entries},open(plan+'/plan.json','w'),indent=1)
print(len(entries))
