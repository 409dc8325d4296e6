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
    for S,wn,g,kt in [(16,128,2,64),(32,256,4,64),(16,256,4,128),(16,512,8,64),(32,128,4,64),(16,256,8,64)]:
        if (k//S)%kt==0 and (wn//g)%8==0: variants.append((16,n,k,f'mma S{S} 16x{wn} w{g} k{kt}',genm.body(16,n,k,S,genm.mma(16,wn,1,g,kt))))
    for m in (64,128):
        for S,wm,wn,gm,gn,kt in [(8,64,64,2,2,64),(16,64,64,2,2,64),(8,32,128,1,4,64),(8,64,128,2,2,128),(8,64,128,1,4,64),(16,32,128,1,4,64),(8,64,256,2,4,64)]:
            if m%wm==0: variants.append((m,n,k,f'mma S{S} {wm}x{wn} w{gm}x{gn} k{kt}',genm.body(m,n,k,S,genm.mma(wm,wn,gm,gn,kt))))
for S,wm,wn,gm,gn,kt in [(16,128,128,2,2,128),(16,64,128,2,2,64),(8,128,128,2,2,64),(16,128,128,2,4,64),(32,64,128,2,2,64)]:
    variants.append((1024,1024,65536,f'mma S{S} {wm}x{wn} w{gm}x{gn} k{kt}',genm.body(1024,1024,65536,S,genm.mma(wm,wn,gm,gn,kt))))
entries=[]
for m,n,k,name,src in variants:
    g=Gemm(m=m,n=n,k=k,dtype="bf16",layout="nn")
    rep=repeat_count(g,t)
    ident=hashlib.sha256(json.dumps([m,n,k,name]).encode()).hexdigest()[:16]
    d=f'{plan}/cases/{ident}'; os.makedirs(d,exist_ok=True)
    e={"id":ident,"label":f"bf16 {g.shape_name} nn {name}","problem":asdict(g),"pipeline":"default","schedule":name,
       "schedule_fields":None,"target":t.name,"flops":g.flops,"repeat":rep,"function":"gemm",
       "input_shapes":[list(s) for s in input_shapes(g)],"input_dtypes":["bf16","bf16"],"vmfb":f"cases/{ident}/gemm.vmfb","status":"ok","vendor":False}
    open(d+'/gemm.mlir','w').write(src)
    r=subprocess.run([IC,d+'/gemm.mlir','--iree-hal-target-device=cuda','--iree-cuda-target=sm_80',f'--iree-hal-benchmark-dispatch-repeat-count={rep}','-o',d+'/gemm.vmfb'],capture_output=True,text=True)
    if r.returncode: e.update(status="compile-failed",error=r.stderr[-300:],vmfb=None); print("FAIL",e['label'],r.stderr[-300:])
    entries.append(e)
json.dump({"target":t.name,"cases":entries},open(plan+'/plan.json','w'),indent=1)
print(len(entries))
