import sys, json, hashlib, subprocess, os
from dataclasses import asdict
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[4])); sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parent))
from transforms.problem import Gemm, input_shapes
from pipelines.bench import repeat_count
from pipelines.targets import get_target
import gen1
t=get_target("sm_80")
from pipelines.compiler import iree_compile_path  # noqa: E402
IC = iree_compile_path()
plan=sys.argv[1]; os.makedirs(plan+'/cases',exist_ok=True)
def nt1(N,K,S,wn,kr):
    b=gen1.skinny1(N,K,S,wn,1,kr)
    Kc=K//S
    b=b.replace(f"%b: tensor<{K}x{N}xbf16>",f"%b: tensor<{N}x{K}xbf16>")
    b=b.replace(f"%b3 = tensor.expand_shape %b [[0, 1], [2]] output_shape [{S}, {Kc}, {N}] : tensor<{K}x{N}xbf16> into tensor<{S}x{Kc}x{N}xbf16>",
                f"%b3 = tensor.expand_shape %b [[0], [1, 2]] output_shape [{N}, {S}, {Kc}] : tensor<{N}x{K}xbf16> into tensor<{N}x{S}x{Kc}xbf16>")
    b=b.replace("#map_b = affine_map<(s, n, k) -> (s, k, n)>","#map_b = affine_map<(s, n, k) -> (n, s, k)>")
    b=b.replace(f"tensor<{S}x{Kc}x{N}xbf16>) outs",f"tensor<{N}x{S}x{Kc}xbf16>) outs")
    return b
variants=[]
for n,k in ((4096,4096),(8192,8192),(14336,4096),(4096,14336)):
    for S,wn,kr in [(16,128,16),(32,128,32),(64,64,16),(16,256,32)]:
        if (k//S)%kr==0: variants.append((1,n,k,f'nt streaming S{S} wn{wn} kr{kr}',nt1(n,k,S,wn,kr)))
entries=[]
for m,n,k,name,src in variants:
    g=Gemm(m=m,n=n,k=k,dtype="bf16",layout="nt")
    rep=repeat_count(g,t)
    ident=hashlib.sha256(json.dumps([m,n,k,name]).encode()).hexdigest()[:16]
    d=f'{plan}/cases/{ident}'; os.makedirs(d,exist_ok=True)
    e={"id":ident,"label":f"bf16 {g.shape_name} nt {name}","problem":asdict(g),"pipeline":"proto","schedule":name,
       "schedule_fields":None,"target":t.name,"flops":g.flops,"repeat":rep,"function":"gemm",
       "input_shapes":[list(s) for s in input_shapes(g)],"input_dtypes":["bf16","bf16"],"vmfb":f"cases/{ident}/gemm.vmfb","status":"ok","vendor":False}
    open(d+'/gemm.mlir','w').write(src)
    r=subprocess.run([IC,d+'/gemm.mlir','--iree-hal-target-device=cuda','--iree-cuda-target=sm_80',f'--iree-hal-benchmark-dispatch-repeat-count={rep}','-o',d+'/gemm.vmfb','--iree-hal-dump-executable-files-to='+d+'/dump'],capture_output=True,text=True)
    if r.returncode: e.update(status="compile-failed",error=r.stderr[-300:],vmfb=None); print("FAIL",e['label'],r.stderr[-300:])
    entries.append(e)
json.dump({"target":t.name,"cases":entries},open(plan+'/plan.json','w'),indent=1)
print(len(entries))
