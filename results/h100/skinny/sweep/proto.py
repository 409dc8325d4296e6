import sys, json, hashlib, subprocess, os
from dataclasses import asdict
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[4])); sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parent))
from transforms.problem import Gemm, input_shapes
from pipelines.bench import repeat_count
from pipelines.targets import get_target
import gen1, genm
t=get_target("sm_80")
from pipelines.compiler import iree_compile_path  # noqa: E402
IC = iree_compile_path()
plan=sys.argv[1]; os.makedirs(plan+'/cases',exist_ok=True)
variants=[]
NK=((4096,4096),(8192,8192),(14336,4096),(4096,14336))
for n,k in NK:
    variants.append((1,n,k,'default',None))
    for S,wn,kr in [(32,512,16),(64,512,16),(64,256,8),(128,512,8),(64,1024,16)]:
        if (k//S)%kr==0: variants.append((1,n,k,f'simt S{S} wn{wn} kr{kr}',gen1.skinny1(n,k,S,wn,8,kr)))
    variants.append((16,n,k,'default',None))
    for S,wn,tm,kr in [(16,256,16,8),(32,256,4,16),(32,512,16,8)]:
        variants.append((16,n,k,f'simt S{S} wn{wn} tm{tm} kr{kr}',genm.body(16,n,k,S,genm.simt(16,wn,tm,8,kr))))
    for S,wn,g,kt in [(8,128,2,64),(16,256,4,64),(8,256,4,32)]:
        variants.append((16,n,k,f'mma S{S} 16x{wn} w{g} k{kt}',genm.body(16,n,k,S,genm.mma(16,wn,1,g,kt))))
    for m in (64,128):
        variants.append((m,n,k,'default',None))
        for S,wm,wn,gm,gn,kt in [(8,64,128,2,2,64),(16,64,128,2,2,64),(8,m,128,2,2,32),(4,m,256,2,4,32)]:
            variants.append((m,n,k,f'mma S{S} {wm}x{wn} w{gm}x{gn} k{kt}',genm.body(m,n,k,S,genm.mma(wm,wn,gm,gn,kt))))
variants.append((1024,1024,65536,'default',None))
for S,wm,wn,gm,gn,kt in [(16,128,128,2,2,64),(32,128,128,2,2,64),(16,128,256,2,4,32),(64,128,128,2,2,64)]:
    variants.append((1024,1024,65536,f'mma S{S} {wm}x{wn} w{gm}x{gn} k{kt}',genm.body(1024,1024,65536,S,genm.mma(wm,wn,gm,gn,kt))))
entries=[]
for m,n,k,name,src in variants:
    g=Gemm(m=m,n=n,k=k,dtype="bf16",layout="nn")
    rep=repeat_count(g,t)
    ident=hashlib.sha256(json.dumps([m,n,k,name]).encode()).hexdigest()[:16]
    d=f'{plan}/cases/{ident}'; os.makedirs(d,exist_ok=True)
    e={"id":ident,"label":f"bf16 {g.shape_name} nn {name}","problem":asdict(g),"pipeline":"default","schedule":name,
       "schedule_fields":None,"target":t.name,"flops":g.flops,"repeat":rep,"function":"gemm",
       "input_shapes":[list(s) for s in input_shapes(g)],"input_dtypes":["bf16","bf16"],"vmfb":f"cases/{ident}/gemm.vmfb","status":"ok","vendor":name=='default'}
    if src is None:
        from transforms.problem import build_module
        from iree.compiler import ir
        with ir.Context(), ir.Location.unknown():
            src=str(build_module(g))
    open(d+'/gemm.mlir','w').write(src)
    r=subprocess.run([IC,d+'/gemm.mlir','--iree-hal-target-device=cuda','--iree-cuda-target=sm_80',f'--iree-hal-benchmark-dispatch-repeat-count={rep}','-o',d+'/gemm.vmfb'],capture_output=True,text=True)
    if r.returncode: e.update(status="compile-failed",error=r.stderr[-300:],vmfb=None); print("FAIL",e['label'],r.stderr[-300:])
    entries.append(e)
json.dump({"target":t.name,"cases":entries},open(plan+'/plan.json','w'),indent=1)
print(len(entries))
