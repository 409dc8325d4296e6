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
variants=[]
for n,k in ((4096,4096),(8192,8192),(14336,4096),(4096,14336)):
    for S,kt in [(4,64),(8,64),(16,64),(8,32)]:
        variants.append((128,n,k,f'mma S{S} 128x128 w2x2 k{kt}',genm.body(128,n,k,S,genm.mma(128,128,2,2,kt))))
for S,kt in [(8,64),(8,32)]:
    variants.append((1024,1024,65536,f'mma S{S} 128x128 w2x2 k{kt}',genm.body(1024,1024,65536,S,genm.mma(128,128,2,2,kt))))
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
    if r.returncode: e.update(status="compile-failed",error=r.stderr[-300:],vmfb=None); print("FAIL",e['label'])
    entries.append(e)
json.dump({"target":t.name,"cases":entries},open(plan+'/plan.json','w'),indent=1)
print(len(entries))
