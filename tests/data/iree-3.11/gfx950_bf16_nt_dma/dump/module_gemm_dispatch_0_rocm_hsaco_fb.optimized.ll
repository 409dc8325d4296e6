; To reproduce the .optimized.ll from the .linked.ll, run:
; opt -S -mtriple=amdgcn-amd-amdhsa -mcpu=gfx950 --passes='verify,memprof-remove-attributes,annotation2metadata,forceattrs,inferattrs,coro-early,function<eager-inv>(ee-instrument<>,lower-expect,simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;no-switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,sroa<modify-cfg>,early-cse<>),openmp-opt,amdgpu-printf-runtime-binding,ipsccp,called-value-propagation,globalopt,function<eager-inv>(mem2reg,instcombine<max-iterations=1;no-verify-fixpoint>,amdgpu-usenative,amdgpu-simplifylib,amdgpu-uniform-intrinsic-combine,simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>),always-inline,require<globals-aa>,function(invalidate<aa>),require<profile-summary>,cgscc(devirt<4>(inline,function-attrs<skip-non-recursive-function-attrs>,openmp-opt-cgscc,function(amdgpu-promote-kernel-arguments,infer-address-spaces,amdgpu-lower-kernel-attributes,amdgpu-promote-alloca-to-vector),function<eager-inv;no-rerun>(sroa<modify-cfg>,early-cse<memssa>,speculative-execution<only-if-divergent-target>,jump-threading,correlated-propagation,simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,instcombine<max-iterations=1;no-verify-fixpoint>,aggressive-instcombine,libcalls-shrinkwrap,amdgpu-usenative,amdgpu-simplifylib,amdgpu-uniform-intrinsic-combine,tailcallelim,simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,reassociate,constraint-elimination,loop-mssa(loop-instsimplify,loop-simplifycfg,licm<no-allowspeculation>,loop-rotate<header-duplication;no-prepare-for-lto>,licm<allowspeculation>,simple-loop-unswitch<no-nontrivial;trivial>),simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,instcombine<max-iterations=1;no-verify-fixpoint>,loop(loop-idiom,indvars,extra-simple-loop-unswitch-passes,loop-deletion,loop-unroll-full),sroa<modify-cfg>,vector-combine,mldst-motion<no-split-footer-bb>,gvn<>,sccp,bdce,instcombine<max-iterations=1;no-verify-fixpoint>,amdgpu-usenative,amdgpu-simplifylib,amdgpu-uniform-intrinsic-combine,jump-threading,correlated-propagation,adce,memcpyopt,dse,move-auto-init,loop-mssa(licm<allowspeculation>),coro-elide,infer-address-spaces,simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;switch-to-arithmetic;no-switch-to-lookup;keep-loops;hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,instcombine<max-iterations=1;no-verify-fixpoint>,amdgpu-usenative,amdgpu-simplifylib,amdgpu-uniform-intrinsic-combine),function-attrs,function(require<should-not-run-function-passes>),coro-split,coro-annotation-elide)),deadargelim,coro-cleanup,globalopt,globaldce,elim-avail-extern,rpo-function-attrs,recompute-globalsaa,function<eager-inv>(drop-unnecessary-assumes,float2int,lower-constant-intrinsics,loop(loop-rotate<header-duplication;no-prepare-for-lto>,loop-deletion),loop-distribute,inject-tli-mappings,loop-vectorize<no-interleave-forced-only;no-vectorize-forced-only;>,drop-unnecessary-assumes,infer-alignment,loop-load-elim,instcombine<max-iterations=1;no-verify-fixpoint>,simplifycfg<bonus-inst-threshold=1;forward-switch-cond;switch-range-to-icmp;switch-to-arithmetic;switch-to-lookup;no-keep-loops;hoist-common-insts;no-hoist-loads-stores-with-cond-faulting;sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables>,slp-vectorizer,vector-combine,instcombine<max-iterations=1;no-verify-fixpoint>,loop-unroll<O2>,transform-warning,sroa<preserve-cfg>,infer-alignment,instcombine<max-iterations=1;no-verify-fixpoint>,loop-mssa(licm<allowspeculation>),alignment-from-assumptions,infer-address-spaces,loop-sink,instsimplify,div-rem-pairs,tailcallelim,simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;switch-to-arithmetic;no-switch-to-lookup;keep-loops;no-hoist-common-insts;hoist-loads-stores-with-cond-faulting;no-sink-common-insts;speculate-blocks;simplify-cond-branch;speculate-unpredictables>),alloc-token,amdgpu-attributor,globaldce,constmerge,cg-profile,rel-lookup-table-converter,function(annotation-remarks),verify' <.linked.ll>
; The flag '-S' is to emit LLVMIR.
; The behavior of some passes depends on '-mtriple' and '-mcpu'.

; ModuleID = 'gemm_dispatch_0'
source_filename = "gemm_dispatch_0"
target datalayout = "e-m:e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"

@__shared_memory___0 = private addrspace(3) global [2 x [128 x [128 x bfloat]]] undef, align 16
@__shared_memory__ = private addrspace(3) global [2 x [64 x [128 x bfloat]]] undef, align 16

; Function Attrs: alwaysinline nounwind
define amdgpu_kernel void @gemm_dispatch_0_matmul_512x512x512_bf16xbf16xf32(ptr addrspace(1) inreg noalias noundef nonnull readonly align 16 captures(none) %0, ptr addrspace(1) inreg noalias noundef nonnull readonly align 16 captures(none) %1, ptr addrspace(1) inreg noalias noundef nonnull writeonly align 16 captures(none) %2) local_unnamed_addr #0 !reqd_work_group_size !2 {
  %4 = tail call range(i32 0, 256) i32 @llvm.amdgcn.workitem.id.x()
  call void @llvm.assume(i1 true) [ "align"(ptr addrspace(1) %0, i64 64) ]
  %5 = tail call ptr addrspace(7) @llvm.amdgcn.make.buffer.rsrc.p7.p1(ptr addrspace(1) nonnull %0, i16 0, i64 524288, i32 159744)
  call void @llvm.assume(i1 true) [ "align"(ptr addrspace(1) %1, i64 64) ]
  %6 = tail call ptr addrspace(7) @llvm.amdgcn.make.buffer.rsrc.p7.p1(ptr addrspace(1) nonnull %1, i16 0, i64 524288, i32 159744)
  call void @llvm.assume(i1 true) [ "align"(ptr addrspace(1) %2, i64 64) ]
  %7 = lshr i32 %4, 6
  %8 = lshr i32 %4, 4
  %9 = and i32 %8, 3
  %10 = and i32 %4, 15
  %11 = shl nuw nsw i32 %9, 3
  %12 = shl nuw nsw i32 %4, 3
  %13 = and i32 %12, 120
  %14 = or disjoint i32 %9, 4
  %15 = or disjoint i32 %9, 8
  %16 = or i32 %8, 12
  %17 = or disjoint i32 %9, 16
  %18 = or disjoint i32 %9, 20
  %19 = or disjoint i32 %9, 24
  %20 = or i32 %8, 28
  %21 = shl nuw nsw i32 %7, 5
  %22 = tail call range(i32 0, 32) i32 @llvm.amdgcn.workgroup.id.x()
  %23 = and i32 %22, 28
  %24 = or disjoint i32 %7, %23
  %25 = shl nuw nsw i32 %24, 4
  %26 = shl nuw nsw i32 %22, 7
  %27 = and i32 %26, 384
  %28 = or disjoint i32 %21, %27
  %29 = or disjoint i32 %25, %9
  %30 = shl nuw nsw i32 %29, 9
  %31 = getelementptr [2 x i8], ptr addrspace(7) %5, i32 %13
  %32 = getelementptr [2 x i8], ptr addrspace(7) %31, i32 %30
  %33 = shl nuw nsw i32 %7, 11
  %34 = zext nneg i32 %33 to i64
  %35 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory__, i32 %33
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %32, ptr addrspace(3) %35, i32 16, i32 0, i32 0)
  %36 = or disjoint i32 %25, %14
  %37 = shl nuw nsw i32 %36, 9
  %38 = getelementptr [2 x i8], ptr addrspace(7) %31, i32 %37
  %39 = or disjoint i64 %34, 512
  %40 = trunc nuw nsw i64 %39 to i32
  %41 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory__, i32 %40
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %38, ptr addrspace(3) %41, i32 16, i32 0, i32 0)
  %42 = or disjoint i32 %25, %15
  %43 = shl nuw nsw i32 %42, 9
  %44 = getelementptr [2 x i8], ptr addrspace(7) %31, i32 %43
  %45 = or disjoint i64 %34, 1024
  %46 = trunc nuw nsw i64 %45 to i32
  %47 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory__, i32 %46
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %44, ptr addrspace(3) %47, i32 16, i32 0, i32 0)
  %48 = or disjoint i32 %25, %16
  %49 = shl nuw nsw i32 %48, 9
  %50 = getelementptr [2 x i8], ptr addrspace(7) %31, i32 %49
  %51 = or disjoint i64 %34, 1536
  %52 = trunc nuw nsw i64 %51 to i32
  %53 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory__, i32 %52
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %50, ptr addrspace(3) %53, i32 16, i32 0, i32 0)
  %54 = or disjoint i32 %28, %9
  %55 = shl nuw nsw i32 %54, 9
  %56 = getelementptr [2 x i8], ptr addrspace(7) %6, i32 %13
  %57 = getelementptr [2 x i8], ptr addrspace(7) %56, i32 %55
  %58 = shl nuw nsw i32 %7, 12
  %59 = zext nneg i32 %58 to i64
  %60 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %58
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %57, ptr addrspace(3) %60, i32 16, i32 0, i32 0)
  %61 = or disjoint i32 %28, %14
  %62 = shl nuw nsw i32 %61, 9
  %63 = getelementptr [2 x i8], ptr addrspace(7) %56, i32 %62
  %64 = or disjoint i64 %59, 512
  %65 = trunc nuw nsw i64 %64 to i32
  %66 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %65
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %63, ptr addrspace(3) %66, i32 16, i32 0, i32 0)
  %67 = or disjoint i32 %28, %15
  %68 = shl nuw nsw i32 %67, 9
  %69 = getelementptr [2 x i8], ptr addrspace(7) %56, i32 %68
  %70 = or disjoint i64 %59, 1024
  %71 = trunc nuw nsw i64 %70 to i32
  %72 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %71
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %69, ptr addrspace(3) %72, i32 16, i32 0, i32 0)
  %73 = or disjoint i32 %28, %16
  %74 = shl nuw nsw i32 %73, 9
  %75 = getelementptr [2 x i8], ptr addrspace(7) %56, i32 %74
  %76 = or disjoint i64 %59, 1536
  %77 = trunc nuw nsw i64 %76 to i32
  %78 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %77
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %75, ptr addrspace(3) %78, i32 16, i32 0, i32 0)
  %79 = or disjoint i32 %28, %17
  %.idx = shl nuw nsw i32 %79, 10
  %80 = getelementptr i8, ptr addrspace(7) %6, i32 %.idx
  %81 = getelementptr [2 x i8], ptr addrspace(7) %80, i32 %13
  %82 = or disjoint i64 %59, 2048
  %83 = trunc nuw nsw i64 %82 to i32
  %84 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %83
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %81, ptr addrspace(3) %84, i32 16, i32 0, i32 0)
  %85 = or disjoint i32 %28, %18
  %.idx1 = shl nuw nsw i32 %85, 10
  %86 = getelementptr i8, ptr addrspace(7) %6, i32 %.idx1
  %87 = getelementptr [2 x i8], ptr addrspace(7) %86, i32 %13
  %88 = or disjoint i64 %59, 2560
  %89 = trunc nuw nsw i64 %88 to i32
  %90 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %89
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %87, ptr addrspace(3) %90, i32 16, i32 0, i32 0)
  %91 = or disjoint i32 %28, %19
  %.idx2 = shl nuw nsw i32 %91, 10
  %92 = getelementptr i8, ptr addrspace(7) %6, i32 %.idx2
  %93 = getelementptr [2 x i8], ptr addrspace(7) %92, i32 %13
  %94 = or disjoint i64 %59, 3072
  %95 = trunc nuw nsw i64 %94 to i32
  %96 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %95
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %93, ptr addrspace(3) %96, i32 16, i32 0, i32 0)
  %97 = or disjoint i32 %28, %20
  %.idx3 = shl nuw nsw i32 %97, 10
  %98 = getelementptr i8, ptr addrspace(7) %6, i32 %.idx3
  %99 = getelementptr [2 x i8], ptr addrspace(7) %98, i32 %13
  %100 = or disjoint i64 %59, 3584
  %101 = trunc nuw nsw i64 %100 to i32
  %102 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %101
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %99, ptr addrspace(3) %102, i32 16, i32 0, i32 0)
  tail call void @llvm.amdgcn.asyncmark()
  %103 = lshr i32 %4, 2
  %104 = and i32 %103, 32
  %105 = or disjoint i32 %104, %10
  %106 = or disjoint i32 %11, 32
  %107 = or disjoint i32 %11, 64
  %108 = or disjoint i32 %11, 96
  %109 = and i32 %4, 79
  %110 = shl nuw nsw i32 %105, 7
  %111 = shl nuw nsw i32 %105, 7
  %112 = or disjoint i32 %111, 2048
  %113 = shl nuw nsw i32 %109, 7
  %114 = shl nuw nsw i32 %109, 7
  %115 = or disjoint i32 %114, 2048
  %116 = shl nuw nsw i32 %109, 7
  %117 = or disjoint i32 %116, 4096
  %118 = shl nuw nsw i32 %109, 7
  %119 = or disjoint i32 %118, 6144
  br label %120

120:                                              ; preds = %3, %120
  %121 = phi { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } [ { ptr addrspace(3) inttoptr (i64 3735928559 to ptr addrspace(3)), ptr addrspace(3) @__shared_memory__, i64 0, [2 x i64] [i64 64, i64 128], [2 x i64] [i64 128, i64 1] }, %3 ], [ %140, %120 ]
  %122 = phi { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } [ { ptr addrspace(3) inttoptr (i64 3735928559 to ptr addrspace(3)), ptr addrspace(3) @__shared_memory___0, i64 0, [2 x i64] [i64 128, i64 128], [2 x i64] [i64 128, i64 1] }, %3 ], [ %134, %120 ]
  %123 = phi [2 x [4 x [4 x <1 x float>]]] [ zeroinitializer, %3 ], [ %426, %120 ]
  %124 = phi i32 [ 0, %3 ], [ %125, %120 ]
  %125 = add nuw nsw i32 %124, 4
  %126 = lshr exact i32 %125, 2
  %127 = and i32 %126, 1
  %128 = zext nneg i32 %127 to i64
  %129 = shl nuw nsw i64 %128, 14
  %130 = insertvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } { ptr addrspace(3) inttoptr (i64 3735928559 to ptr addrspace(3)), ptr addrspace(3) @__shared_memory___0, i64 poison, [2 x i64] poison, [2 x i64] poison }, i64 %129, 2
  %131 = insertvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } %130, i64 128, 3, 0
  %132 = insertvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } %131, i64 128, 4, 0
  %133 = insertvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } %132, i64 128, 3, 1
  %134 = insertvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } %133, i64 1, 4, 1
  %135 = shl nuw nsw i64 %128, 13
  %136 = insertvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } { ptr addrspace(3) inttoptr (i64 3735928559 to ptr addrspace(3)), ptr addrspace(3) @__shared_memory__, i64 poison, [2 x i64] poison, [2 x i64] poison }, i64 %135, 2
  %137 = insertvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } %136, i64 64, 3, 0
  %138 = insertvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } %137, i64 128, 4, 0
  %139 = insertvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } %138, i64 128, 3, 1
  %140 = insertvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } %139, i64 1, 4, 1
  %141 = shl nuw nsw i32 %125, 5
  fence syncscope("workgroup") release, !mmra !3
  tail call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire, !mmra !3
  %142 = or disjoint i32 %141, %13
  %143 = getelementptr [2 x i8], ptr addrspace(7) %5, i32 %142
  %144 = getelementptr [2 x i8], ptr addrspace(7) %143, i32 %30
  %145 = trunc nuw nsw i64 %135 to i32
  %146 = getelementptr [2 x i8], ptr addrspace(3) %35, i32 %145
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %144, ptr addrspace(3) %146, i32 16, i32 0, i32 0)
  %147 = getelementptr [2 x i8], ptr addrspace(7) %143, i32 %37
  %148 = or disjoint i64 %135, %39
  %149 = trunc nuw nsw i64 %148 to i32
  %150 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory__, i32 %149
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %147, ptr addrspace(3) %150, i32 16, i32 0, i32 0)
  %151 = getelementptr [2 x i8], ptr addrspace(7) %143, i32 %43
  %152 = or disjoint i64 %135, %45
  %153 = trunc nuw nsw i64 %152 to i32
  %154 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory__, i32 %153
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %151, ptr addrspace(3) %154, i32 16, i32 0, i32 0)
  %155 = getelementptr [2 x i8], ptr addrspace(7) %143, i32 %49
  %156 = or disjoint i64 %135, %51
  %157 = trunc nuw nsw i64 %156 to i32
  %158 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory__, i32 %157
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %155, ptr addrspace(3) %158, i32 16, i32 0, i32 0)
  %159 = getelementptr [2 x i8], ptr addrspace(7) %6, i32 %142
  %160 = getelementptr [2 x i8], ptr addrspace(7) %159, i32 %55
  %161 = trunc nuw nsw i64 %129 to i32
  %162 = getelementptr [2 x i8], ptr addrspace(3) %60, i32 %161
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %160, ptr addrspace(3) %162, i32 16, i32 0, i32 0)
  %163 = getelementptr [2 x i8], ptr addrspace(7) %159, i32 %62
  %164 = or disjoint i64 %129, %64
  %165 = trunc nuw nsw i64 %164 to i32
  %166 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %165
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %163, ptr addrspace(3) %166, i32 16, i32 0, i32 0)
  %167 = getelementptr [2 x i8], ptr addrspace(7) %159, i32 %68
  %168 = or disjoint i64 %129, %70
  %169 = trunc nuw nsw i64 %168 to i32
  %170 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %169
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %167, ptr addrspace(3) %170, i32 16, i32 0, i32 0)
  %171 = getelementptr [2 x i8], ptr addrspace(7) %159, i32 %74
  %172 = or disjoint i64 %129, %76
  %173 = trunc nuw nsw i64 %172 to i32
  %174 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %173
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %171, ptr addrspace(3) %174, i32 16, i32 0, i32 0)
  %gep = getelementptr [2 x i8], ptr addrspace(7) %81, i32 %141
  %175 = or disjoint i64 %129, %82
  %176 = trunc nuw nsw i64 %175 to i32
  %177 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %176
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %gep, ptr addrspace(3) %177, i32 16, i32 0, i32 0)
  %gep7 = getelementptr [2 x i8], ptr addrspace(7) %87, i32 %141
  %178 = or disjoint i64 %129, %88
  %179 = trunc nuw nsw i64 %178 to i32
  %180 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %179
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %gep7, ptr addrspace(3) %180, i32 16, i32 0, i32 0)
  %gep9 = getelementptr [2 x i8], ptr addrspace(7) %93, i32 %141
  %181 = or disjoint i64 %129, %94
  %182 = trunc nuw nsw i64 %181 to i32
  %183 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %182
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %gep9, ptr addrspace(3) %183, i32 16, i32 0, i32 0)
  %gep11 = getelementptr [2 x i8], ptr addrspace(7) %99, i32 %141
  %184 = or disjoint i64 %129, %100
  %185 = trunc nuw nsw i64 %184 to i32
  %186 = getelementptr [2 x i8], ptr addrspace(3) @__shared_memory___0, i32 %185
  tail call void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) %gep11, ptr addrspace(3) %186, i32 16, i32 0, i32 0)
  tail call void @llvm.amdgcn.asyncmark()
  tail call void @llvm.amdgcn.wait.asyncmark(i16 1)
  fence syncscope("workgroup") release, !mmra !3
  tail call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire, !mmra !3
  %187 = extractvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } %121, 1
  %188 = extractvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } %121, 2
  %189 = trunc i64 %188 to i32
  %190 = getelementptr [2 x i8], ptr addrspace(3) %187, i32 %189
  %191 = getelementptr [2 x i8], ptr addrspace(3) %190, i32 %11
  %192 = getelementptr [2 x i8], ptr addrspace(3) %191, i32 %110
  %193 = load <8 x bfloat>, ptr addrspace(3) %192, align 2
  %194 = getelementptr [2 x i8], ptr addrspace(3) %190, i32 %106
  %195 = getelementptr [2 x i8], ptr addrspace(3) %194, i32 %110
  %196 = load <8 x bfloat>, ptr addrspace(3) %195, align 2
  %197 = getelementptr [2 x i8], ptr addrspace(3) %190, i32 %107
  %198 = getelementptr [2 x i8], ptr addrspace(3) %197, i32 %110
  %199 = load <8 x bfloat>, ptr addrspace(3) %198, align 2
  %200 = getelementptr [2 x i8], ptr addrspace(3) %190, i32 %108
  %201 = getelementptr [2 x i8], ptr addrspace(3) %200, i32 %110
  %202 = load <8 x bfloat>, ptr addrspace(3) %201, align 2
  %203 = getelementptr [2 x i8], ptr addrspace(3) %191, i32 %112
  %204 = load <8 x bfloat>, ptr addrspace(3) %203, align 2
  %205 = getelementptr [2 x i8], ptr addrspace(3) %194, i32 %112
  %206 = load <8 x bfloat>, ptr addrspace(3) %205, align 2
  %207 = getelementptr [2 x i8], ptr addrspace(3) %197, i32 %112
  %208 = load <8 x bfloat>, ptr addrspace(3) %207, align 2
  %209 = getelementptr [2 x i8], ptr addrspace(3) %200, i32 %112
  %210 = load <8 x bfloat>, ptr addrspace(3) %209, align 2
  %211 = extractvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } %122, 1
  %212 = extractvalue { ptr addrspace(3), ptr addrspace(3), i64, [2 x i64], [2 x i64] } %122, 2
  %213 = trunc i64 %212 to i32
  %214 = getelementptr [2 x i8], ptr addrspace(3) %211, i32 %213
  %215 = getelementptr [2 x i8], ptr addrspace(3) %214, i32 %11
  %216 = getelementptr [2 x i8], ptr addrspace(3) %215, i32 %113
  %217 = load <8 x bfloat>, ptr addrspace(3) %216, align 2
  %218 = getelementptr [2 x i8], ptr addrspace(3) %214, i32 %106
  %219 = getelementptr [2 x i8], ptr addrspace(3) %218, i32 %113
  %220 = load <8 x bfloat>, ptr addrspace(3) %219, align 2
  %221 = getelementptr [2 x i8], ptr addrspace(3) %214, i32 %107
  %222 = getelementptr [2 x i8], ptr addrspace(3) %221, i32 %113
  %223 = load <8 x bfloat>, ptr addrspace(3) %222, align 2
  %224 = getelementptr [2 x i8], ptr addrspace(3) %214, i32 %108
  %225 = getelementptr [2 x i8], ptr addrspace(3) %224, i32 %113
  %226 = load <8 x bfloat>, ptr addrspace(3) %225, align 2
  %227 = getelementptr [2 x i8], ptr addrspace(3) %215, i32 %115
  %228 = load <8 x bfloat>, ptr addrspace(3) %227, align 2
  %229 = getelementptr [2 x i8], ptr addrspace(3) %218, i32 %115
  %230 = load <8 x bfloat>, ptr addrspace(3) %229, align 2
  %231 = getelementptr [2 x i8], ptr addrspace(3) %221, i32 %115
  %232 = load <8 x bfloat>, ptr addrspace(3) %231, align 2
  %233 = getelementptr [2 x i8], ptr addrspace(3) %224, i32 %115
  %234 = load <8 x bfloat>, ptr addrspace(3) %233, align 2
  %235 = getelementptr [2 x i8], ptr addrspace(3) %215, i32 %117
  %236 = load <8 x bfloat>, ptr addrspace(3) %235, align 2
  %237 = getelementptr [2 x i8], ptr addrspace(3) %218, i32 %117
  %238 = load <8 x bfloat>, ptr addrspace(3) %237, align 2
  %239 = getelementptr [2 x i8], ptr addrspace(3) %221, i32 %117
  %240 = load <8 x bfloat>, ptr addrspace(3) %239, align 2
  %241 = getelementptr [2 x i8], ptr addrspace(3) %224, i32 %117
  %242 = load <8 x bfloat>, ptr addrspace(3) %241, align 2
  %243 = getelementptr [2 x i8], ptr addrspace(3) %215, i32 %119
  %244 = load <8 x bfloat>, ptr addrspace(3) %243, align 2
  %245 = getelementptr [2 x i8], ptr addrspace(3) %218, i32 %119
  %246 = load <8 x bfloat>, ptr addrspace(3) %245, align 2
  %247 = getelementptr [2 x i8], ptr addrspace(3) %221, i32 %119
  %248 = load <8 x bfloat>, ptr addrspace(3) %247, align 2
  %249 = getelementptr [2 x i8], ptr addrspace(3) %224, i32 %119
  %250 = load <8 x bfloat>, ptr addrspace(3) %249, align 2
  %251 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 0, 0
  %252 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 0, 1
  %253 = shufflevector <1 x float> %251, <1 x float> %252, <4 x i32> <i32 0, i32 1, i32 poison, i32 poison>
  %254 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 0, 2
  %255 = shufflevector <1 x float> %254, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %256 = shufflevector <4 x float> %253, <4 x float> %255, <4 x i32> <i32 0, i32 1, i32 4, i32 poison>
  %257 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 0, 3
  %258 = shufflevector <1 x float> %257, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %259 = shufflevector <4 x float> %256, <4 x float> %258, <4 x i32> <i32 0, i32 1, i32 2, i32 4>
  %260 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %193, <8 x bfloat> %217, <4 x float> %259, i32 0, i32 0, i32 0)
  %261 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 1, 0
  %262 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 1, 1
  %263 = shufflevector <1 x float> %261, <1 x float> %262, <4 x i32> <i32 0, i32 1, i32 poison, i32 poison>
  %264 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 1, 2
  %265 = shufflevector <1 x float> %264, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %266 = shufflevector <4 x float> %263, <4 x float> %265, <4 x i32> <i32 0, i32 1, i32 4, i32 poison>
  %267 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 1, 3
  %268 = shufflevector <1 x float> %267, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %269 = shufflevector <4 x float> %266, <4 x float> %268, <4 x i32> <i32 0, i32 1, i32 2, i32 4>
  %270 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %193, <8 x bfloat> %228, <4 x float> %269, i32 0, i32 0, i32 0)
  %271 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 2, 0
  %272 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 2, 1
  %273 = shufflevector <1 x float> %271, <1 x float> %272, <4 x i32> <i32 0, i32 1, i32 poison, i32 poison>
  %274 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 2, 2
  %275 = shufflevector <1 x float> %274, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %276 = shufflevector <4 x float> %273, <4 x float> %275, <4 x i32> <i32 0, i32 1, i32 4, i32 poison>
  %277 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 2, 3
  %278 = shufflevector <1 x float> %277, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %279 = shufflevector <4 x float> %276, <4 x float> %278, <4 x i32> <i32 0, i32 1, i32 2, i32 4>
  %280 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %193, <8 x bfloat> %236, <4 x float> %279, i32 0, i32 0, i32 0)
  %281 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 3, 0
  %282 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 3, 1
  %283 = shufflevector <1 x float> %281, <1 x float> %282, <4 x i32> <i32 0, i32 1, i32 poison, i32 poison>
  %284 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 3, 2
  %285 = shufflevector <1 x float> %284, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %286 = shufflevector <4 x float> %283, <4 x float> %285, <4 x i32> <i32 0, i32 1, i32 4, i32 poison>
  %287 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 0, 3, 3
  %288 = shufflevector <1 x float> %287, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %289 = shufflevector <4 x float> %286, <4 x float> %288, <4 x i32> <i32 0, i32 1, i32 2, i32 4>
  %290 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %193, <8 x bfloat> %244, <4 x float> %289, i32 0, i32 0, i32 0)
  %291 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 0, 0
  %292 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 0, 1
  %293 = shufflevector <1 x float> %291, <1 x float> %292, <4 x i32> <i32 0, i32 1, i32 poison, i32 poison>
  %294 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 0, 2
  %295 = shufflevector <1 x float> %294, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %296 = shufflevector <4 x float> %293, <4 x float> %295, <4 x i32> <i32 0, i32 1, i32 4, i32 poison>
  %297 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 0, 3
  %298 = shufflevector <1 x float> %297, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %299 = shufflevector <4 x float> %296, <4 x float> %298, <4 x i32> <i32 0, i32 1, i32 2, i32 4>
  %300 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %204, <8 x bfloat> %217, <4 x float> %299, i32 0, i32 0, i32 0)
  %301 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 1, 0
  %302 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 1, 1
  %303 = shufflevector <1 x float> %301, <1 x float> %302, <4 x i32> <i32 0, i32 1, i32 poison, i32 poison>
  %304 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 1, 2
  %305 = shufflevector <1 x float> %304, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %306 = shufflevector <4 x float> %303, <4 x float> %305, <4 x i32> <i32 0, i32 1, i32 4, i32 poison>
  %307 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 1, 3
  %308 = shufflevector <1 x float> %307, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %309 = shufflevector <4 x float> %306, <4 x float> %308, <4 x i32> <i32 0, i32 1, i32 2, i32 4>
  %310 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %204, <8 x bfloat> %228, <4 x float> %309, i32 0, i32 0, i32 0)
  %311 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 2, 0
  %312 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 2, 1
  %313 = shufflevector <1 x float> %311, <1 x float> %312, <4 x i32> <i32 0, i32 1, i32 poison, i32 poison>
  %314 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 2, 2
  %315 = shufflevector <1 x float> %314, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %316 = shufflevector <4 x float> %313, <4 x float> %315, <4 x i32> <i32 0, i32 1, i32 4, i32 poison>
  %317 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 2, 3
  %318 = shufflevector <1 x float> %317, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %319 = shufflevector <4 x float> %316, <4 x float> %318, <4 x i32> <i32 0, i32 1, i32 2, i32 4>
  %320 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %204, <8 x bfloat> %236, <4 x float> %319, i32 0, i32 0, i32 0)
  %321 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 3, 0
  %322 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 3, 1
  %323 = shufflevector <1 x float> %321, <1 x float> %322, <4 x i32> <i32 0, i32 1, i32 poison, i32 poison>
  %324 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 3, 2
  %325 = shufflevector <1 x float> %324, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %326 = shufflevector <4 x float> %323, <4 x float> %325, <4 x i32> <i32 0, i32 1, i32 4, i32 poison>
  %327 = extractvalue [2 x [4 x [4 x <1 x float>]]] %123, 1, 3, 3
  %328 = shufflevector <1 x float> %327, <1 x float> poison, <4 x i32> <i32 0, i32 poison, i32 poison, i32 poison>
  %329 = shufflevector <4 x float> %326, <4 x float> %328, <4 x i32> <i32 0, i32 1, i32 2, i32 4>
  %330 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %204, <8 x bfloat> %244, <4 x float> %329, i32 0, i32 0, i32 0)
  %331 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %196, <8 x bfloat> %220, <4 x float> %260, i32 0, i32 0, i32 0)
  %332 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %196, <8 x bfloat> %230, <4 x float> %270, i32 0, i32 0, i32 0)
  %333 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %196, <8 x bfloat> %238, <4 x float> %280, i32 0, i32 0, i32 0)
  %334 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %196, <8 x bfloat> %246, <4 x float> %290, i32 0, i32 0, i32 0)
  %335 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %206, <8 x bfloat> %220, <4 x float> %300, i32 0, i32 0, i32 0)
  %336 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %206, <8 x bfloat> %230, <4 x float> %310, i32 0, i32 0, i32 0)
  %337 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %206, <8 x bfloat> %238, <4 x float> %320, i32 0, i32 0, i32 0)
  %338 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %206, <8 x bfloat> %246, <4 x float> %330, i32 0, i32 0, i32 0)
  %339 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %199, <8 x bfloat> %223, <4 x float> %331, i32 0, i32 0, i32 0)
  %340 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %199, <8 x bfloat> %232, <4 x float> %332, i32 0, i32 0, i32 0)
  %341 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %199, <8 x bfloat> %240, <4 x float> %333, i32 0, i32 0, i32 0)
  %342 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %199, <8 x bfloat> %248, <4 x float> %334, i32 0, i32 0, i32 0)
  %343 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %208, <8 x bfloat> %223, <4 x float> %335, i32 0, i32 0, i32 0)
  %344 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %208, <8 x bfloat> %232, <4 x float> %336, i32 0, i32 0, i32 0)
  %345 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %208, <8 x bfloat> %240, <4 x float> %337, i32 0, i32 0, i32 0)
  %346 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %208, <8 x bfloat> %248, <4 x float> %338, i32 0, i32 0, i32 0)
  %347 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %202, <8 x bfloat> %226, <4 x float> %339, i32 0, i32 0, i32 0)
  %348 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %202, <8 x bfloat> %234, <4 x float> %340, i32 0, i32 0, i32 0)
  %349 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %202, <8 x bfloat> %242, <4 x float> %341, i32 0, i32 0, i32 0)
  %350 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %202, <8 x bfloat> %250, <4 x float> %342, i32 0, i32 0, i32 0)
  %351 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %210, <8 x bfloat> %226, <4 x float> %343, i32 0, i32 0, i32 0)
  %352 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %210, <8 x bfloat> %234, <4 x float> %344, i32 0, i32 0, i32 0)
  %353 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %210, <8 x bfloat> %242, <4 x float> %345, i32 0, i32 0, i32 0)
  %354 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %210, <8 x bfloat> %250, <4 x float> %346, i32 0, i32 0, i32 0)
  %355 = shufflevector <4 x float> %347, <4 x float> poison, <1 x i32> zeroinitializer
  %356 = insertvalue [4 x <1 x float>] poison, <1 x float> %355, 0
  %357 = shufflevector <4 x float> %347, <4 x float> poison, <1 x i32> <i32 1>
  %358 = insertvalue [4 x <1 x float>] %356, <1 x float> %357, 1
  %359 = shufflevector <4 x float> %347, <4 x float> poison, <1 x i32> <i32 2>
  %360 = insertvalue [4 x <1 x float>] %358, <1 x float> %359, 2
  %361 = shufflevector <4 x float> %347, <4 x float> poison, <1 x i32> <i32 3>
  %362 = insertvalue [4 x <1 x float>] %360, <1 x float> %361, 3
  %363 = insertvalue [2 x [4 x [4 x <1 x float>]]] zeroinitializer, [4 x <1 x float>] %362, 0, 0
  %364 = shufflevector <4 x float> %348, <4 x float> poison, <1 x i32> zeroinitializer
  %365 = insertvalue [4 x <1 x float>] poison, <1 x float> %364, 0
  %366 = shufflevector <4 x float> %348, <4 x float> poison, <1 x i32> <i32 1>
  %367 = insertvalue [4 x <1 x float>] %365, <1 x float> %366, 1
  %368 = shufflevector <4 x float> %348, <4 x float> poison, <1 x i32> <i32 2>
  %369 = insertvalue [4 x <1 x float>] %367, <1 x float> %368, 2
  %370 = shufflevector <4 x float> %348, <4 x float> poison, <1 x i32> <i32 3>
  %371 = insertvalue [4 x <1 x float>] %369, <1 x float> %370, 3
  %372 = insertvalue [2 x [4 x [4 x <1 x float>]]] %363, [4 x <1 x float>] %371, 0, 1
  %373 = shufflevector <4 x float> %349, <4 x float> poison, <1 x i32> zeroinitializer
  %374 = insertvalue [4 x <1 x float>] poison, <1 x float> %373, 0
  %375 = shufflevector <4 x float> %349, <4 x float> poison, <1 x i32> <i32 1>
  %376 = insertvalue [4 x <1 x float>] %374, <1 x float> %375, 1
  %377 = shufflevector <4 x float> %349, <4 x float> poison, <1 x i32> <i32 2>
  %378 = insertvalue [4 x <1 x float>] %376, <1 x float> %377, 2
  %379 = shufflevector <4 x float> %349, <4 x float> poison, <1 x i32> <i32 3>
  %380 = insertvalue [4 x <1 x float>] %378, <1 x float> %379, 3
  %381 = insertvalue [2 x [4 x [4 x <1 x float>]]] %372, [4 x <1 x float>] %380, 0, 2
  %382 = shufflevector <4 x float> %350, <4 x float> poison, <1 x i32> zeroinitializer
  %383 = insertvalue [4 x <1 x float>] poison, <1 x float> %382, 0
  %384 = shufflevector <4 x float> %350, <4 x float> poison, <1 x i32> <i32 1>
  %385 = insertvalue [4 x <1 x float>] %383, <1 x float> %384, 1
  %386 = shufflevector <4 x float> %350, <4 x float> poison, <1 x i32> <i32 2>
  %387 = insertvalue [4 x <1 x float>] %385, <1 x float> %386, 2
  %388 = shufflevector <4 x float> %350, <4 x float> poison, <1 x i32> <i32 3>
  %389 = insertvalue [4 x <1 x float>] %387, <1 x float> %388, 3
  %390 = insertvalue [2 x [4 x [4 x <1 x float>]]] %381, [4 x <1 x float>] %389, 0, 3
  %391 = shufflevector <4 x float> %351, <4 x float> poison, <1 x i32> zeroinitializer
  %392 = insertvalue [4 x <1 x float>] poison, <1 x float> %391, 0
  %393 = shufflevector <4 x float> %351, <4 x float> poison, <1 x i32> <i32 1>
  %394 = insertvalue [4 x <1 x float>] %392, <1 x float> %393, 1
  %395 = shufflevector <4 x float> %351, <4 x float> poison, <1 x i32> <i32 2>
  %396 = insertvalue [4 x <1 x float>] %394, <1 x float> %395, 2
  %397 = shufflevector <4 x float> %351, <4 x float> poison, <1 x i32> <i32 3>
  %398 = insertvalue [4 x <1 x float>] %396, <1 x float> %397, 3
  %399 = insertvalue [2 x [4 x [4 x <1 x float>]]] %390, [4 x <1 x float>] %398, 1, 0
  %400 = shufflevector <4 x float> %352, <4 x float> poison, <1 x i32> zeroinitializer
  %401 = insertvalue [4 x <1 x float>] poison, <1 x float> %400, 0
  %402 = shufflevector <4 x float> %352, <4 x float> poison, <1 x i32> <i32 1>
  %403 = insertvalue [4 x <1 x float>] %401, <1 x float> %402, 1
  %404 = shufflevector <4 x float> %352, <4 x float> poison, <1 x i32> <i32 2>
  %405 = insertvalue [4 x <1 x float>] %403, <1 x float> %404, 2
  %406 = shufflevector <4 x float> %352, <4 x float> poison, <1 x i32> <i32 3>
  %407 = insertvalue [4 x <1 x float>] %405, <1 x float> %406, 3
  %408 = insertvalue [2 x [4 x [4 x <1 x float>]]] %399, [4 x <1 x float>] %407, 1, 1
  %409 = shufflevector <4 x float> %353, <4 x float> poison, <1 x i32> zeroinitializer
  %410 = insertvalue [4 x <1 x float>] poison, <1 x float> %409, 0
  %411 = shufflevector <4 x float> %353, <4 x float> poison, <1 x i32> <i32 1>
  %412 = insertvalue [4 x <1 x float>] %410, <1 x float> %411, 1
  %413 = shufflevector <4 x float> %353, <4 x float> poison, <1 x i32> <i32 2>
  %414 = insertvalue [4 x <1 x float>] %412, <1 x float> %413, 2
  %415 = shufflevector <4 x float> %353, <4 x float> poison, <1 x i32> <i32 3>
  %416 = insertvalue [4 x <1 x float>] %414, <1 x float> %415, 3
  %417 = insertvalue [2 x [4 x [4 x <1 x float>]]] %408, [4 x <1 x float>] %416, 1, 2
  %418 = shufflevector <4 x float> %354, <4 x float> poison, <1 x i32> zeroinitializer
  %419 = insertvalue [4 x <1 x float>] poison, <1 x float> %418, 0
  %420 = shufflevector <4 x float> %354, <4 x float> poison, <1 x i32> <i32 1>
  %421 = insertvalue [4 x <1 x float>] %419, <1 x float> %420, 1
  %422 = shufflevector <4 x float> %354, <4 x float> poison, <1 x i32> <i32 2>
  %423 = insertvalue [4 x <1 x float>] %421, <1 x float> %422, 2
  %424 = shufflevector <4 x float> %354, <4 x float> poison, <1 x i32> <i32 3>
  %425 = insertvalue [4 x <1 x float>] %423, <1 x float> %424, 3
  %426 = insertvalue [2 x [4 x [4 x <1 x float>]]] %417, [4 x <1 x float>] %425, 1, 3
  %427 = icmp samesign ult i32 %124, 8
  br i1 %427, label %120, label %428

428:                                              ; preds = %120
  %429 = shl nuw nsw i32 %22, 4
  %430 = and i32 %429, 448
  %431 = shl nuw nsw i32 %9, 2
  %432 = tail call ptr addrspace(7) @llvm.amdgcn.make.buffer.rsrc.p7.p1(ptr addrspace(1) nonnull %2, i16 0, i64 1048576, i32 159744)
  tail call void @llvm.amdgcn.wait.asyncmark(i16 0)
  fence syncscope("workgroup") release, !mmra !3
  tail call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire, !mmra !3
  %433 = getelementptr [2 x i8], ptr addrspace(3) getelementptr inbounds nuw (i8, ptr addrspace(3) @__shared_memory__, i32 16384), i32 %11
  %434 = getelementptr [2 x i8], ptr addrspace(3) %433, i32 %110
  %435 = load <8 x bfloat>, ptr addrspace(3) %434, align 16
  %436 = getelementptr [2 x i8], ptr addrspace(3) getelementptr inbounds nuw (i8, ptr addrspace(3) @__shared_memory__, i32 16384), i32 %106
  %437 = getelementptr [2 x i8], ptr addrspace(3) %436, i32 %110
  %438 = load <8 x bfloat>, ptr addrspace(3) %437, align 16
  %439 = getelementptr [2 x i8], ptr addrspace(3) getelementptr inbounds nuw (i8, ptr addrspace(3) @__shared_memory__, i32 16384), i32 %107
  %440 = getelementptr [2 x i8], ptr addrspace(3) %439, i32 %110
  %441 = load <8 x bfloat>, ptr addrspace(3) %440, align 16
  %442 = getelementptr [2 x i8], ptr addrspace(3) getelementptr inbounds nuw (i8, ptr addrspace(3) @__shared_memory__, i32 16384), i32 %108
  %443 = getelementptr [2 x i8], ptr addrspace(3) %442, i32 %110
  %444 = load <8 x bfloat>, ptr addrspace(3) %443, align 16
  %445 = getelementptr [2 x i8], ptr addrspace(3) %433, i32 %112
  %446 = load <8 x bfloat>, ptr addrspace(3) %445, align 16
  %447 = getelementptr [2 x i8], ptr addrspace(3) %436, i32 %112
  %448 = load <8 x bfloat>, ptr addrspace(3) %447, align 16
  %449 = getelementptr [2 x i8], ptr addrspace(3) %439, i32 %112
  %450 = load <8 x bfloat>, ptr addrspace(3) %449, align 16
  %451 = getelementptr [2 x i8], ptr addrspace(3) %442, i32 %112
  %452 = load <8 x bfloat>, ptr addrspace(3) %451, align 16
  %453 = getelementptr [2 x i8], ptr addrspace(3) getelementptr inbounds nuw (i8, ptr addrspace(3) @__shared_memory___0, i32 32768), i32 %11
  %454 = getelementptr [2 x i8], ptr addrspace(3) %453, i32 %113
  %455 = load <8 x bfloat>, ptr addrspace(3) %454, align 16
  %456 = getelementptr [2 x i8], ptr addrspace(3) getelementptr inbounds nuw (i8, ptr addrspace(3) @__shared_memory___0, i32 32768), i32 %106
  %457 = getelementptr [2 x i8], ptr addrspace(3) %456, i32 %113
  %458 = load <8 x bfloat>, ptr addrspace(3) %457, align 16
  %459 = getelementptr [2 x i8], ptr addrspace(3) getelementptr inbounds nuw (i8, ptr addrspace(3) @__shared_memory___0, i32 32768), i32 %107
  %460 = getelementptr [2 x i8], ptr addrspace(3) %459, i32 %113
  %461 = load <8 x bfloat>, ptr addrspace(3) %460, align 16
  %462 = getelementptr [2 x i8], ptr addrspace(3) getelementptr inbounds nuw (i8, ptr addrspace(3) @__shared_memory___0, i32 32768), i32 %108
  %463 = getelementptr [2 x i8], ptr addrspace(3) %462, i32 %113
  %464 = load <8 x bfloat>, ptr addrspace(3) %463, align 16
  %465 = getelementptr [2 x i8], ptr addrspace(3) %453, i32 %115
  %466 = load <8 x bfloat>, ptr addrspace(3) %465, align 16
  %467 = getelementptr [2 x i8], ptr addrspace(3) %456, i32 %115
  %468 = load <8 x bfloat>, ptr addrspace(3) %467, align 16
  %469 = getelementptr [2 x i8], ptr addrspace(3) %459, i32 %115
  %470 = load <8 x bfloat>, ptr addrspace(3) %469, align 16
  %471 = getelementptr [2 x i8], ptr addrspace(3) %462, i32 %115
  %472 = load <8 x bfloat>, ptr addrspace(3) %471, align 16
  %473 = getelementptr [2 x i8], ptr addrspace(3) %453, i32 %117
  %474 = load <8 x bfloat>, ptr addrspace(3) %473, align 16
  %475 = getelementptr [2 x i8], ptr addrspace(3) %456, i32 %117
  %476 = load <8 x bfloat>, ptr addrspace(3) %475, align 16
  %477 = getelementptr [2 x i8], ptr addrspace(3) %459, i32 %117
  %478 = load <8 x bfloat>, ptr addrspace(3) %477, align 16
  %479 = getelementptr [2 x i8], ptr addrspace(3) %462, i32 %117
  %480 = load <8 x bfloat>, ptr addrspace(3) %479, align 16
  %481 = getelementptr [2 x i8], ptr addrspace(3) %453, i32 %119
  %482 = load <8 x bfloat>, ptr addrspace(3) %481, align 16
  %483 = getelementptr [2 x i8], ptr addrspace(3) %456, i32 %119
  %484 = load <8 x bfloat>, ptr addrspace(3) %483, align 16
  %485 = getelementptr [2 x i8], ptr addrspace(3) %459, i32 %119
  %486 = load <8 x bfloat>, ptr addrspace(3) %485, align 16
  %487 = getelementptr [2 x i8], ptr addrspace(3) %462, i32 %119
  %488 = load <8 x bfloat>, ptr addrspace(3) %487, align 16
  %489 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %435, <8 x bfloat> %455, <4 x float> %347, i32 0, i32 0, i32 0)
  %490 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %435, <8 x bfloat> %466, <4 x float> %348, i32 0, i32 0, i32 0)
  %491 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %435, <8 x bfloat> %474, <4 x float> %349, i32 0, i32 0, i32 0)
  %492 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %435, <8 x bfloat> %482, <4 x float> %350, i32 0, i32 0, i32 0)
  %493 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %446, <8 x bfloat> %455, <4 x float> %351, i32 0, i32 0, i32 0)
  %494 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %446, <8 x bfloat> %466, <4 x float> %352, i32 0, i32 0, i32 0)
  %495 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %446, <8 x bfloat> %474, <4 x float> %353, i32 0, i32 0, i32 0)
  %496 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %446, <8 x bfloat> %482, <4 x float> %354, i32 0, i32 0, i32 0)
  %497 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %438, <8 x bfloat> %458, <4 x float> %489, i32 0, i32 0, i32 0)
  %498 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %438, <8 x bfloat> %468, <4 x float> %490, i32 0, i32 0, i32 0)
  %499 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %438, <8 x bfloat> %476, <4 x float> %491, i32 0, i32 0, i32 0)
  %500 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %438, <8 x bfloat> %484, <4 x float> %492, i32 0, i32 0, i32 0)
  %501 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %448, <8 x bfloat> %458, <4 x float> %493, i32 0, i32 0, i32 0)
  %502 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %448, <8 x bfloat> %468, <4 x float> %494, i32 0, i32 0, i32 0)
  %503 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %448, <8 x bfloat> %476, <4 x float> %495, i32 0, i32 0, i32 0)
  %504 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %448, <8 x bfloat> %484, <4 x float> %496, i32 0, i32 0, i32 0)
  %505 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %441, <8 x bfloat> %461, <4 x float> %497, i32 0, i32 0, i32 0)
  %506 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %441, <8 x bfloat> %470, <4 x float> %498, i32 0, i32 0, i32 0)
  %507 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %441, <8 x bfloat> %478, <4 x float> %499, i32 0, i32 0, i32 0)
  %508 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %441, <8 x bfloat> %486, <4 x float> %500, i32 0, i32 0, i32 0)
  %509 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %450, <8 x bfloat> %461, <4 x float> %501, i32 0, i32 0, i32 0)
  %510 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %450, <8 x bfloat> %470, <4 x float> %502, i32 0, i32 0, i32 0)
  %511 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %450, <8 x bfloat> %478, <4 x float> %503, i32 0, i32 0, i32 0)
  %512 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %450, <8 x bfloat> %486, <4 x float> %504, i32 0, i32 0, i32 0)
  %513 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %444, <8 x bfloat> %464, <4 x float> %505, i32 0, i32 0, i32 0)
  %514 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %444, <8 x bfloat> %472, <4 x float> %506, i32 0, i32 0, i32 0)
  %515 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %444, <8 x bfloat> %480, <4 x float> %507, i32 0, i32 0, i32 0)
  %516 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %444, <8 x bfloat> %488, <4 x float> %508, i32 0, i32 0, i32 0)
  %517 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %452, <8 x bfloat> %464, <4 x float> %509, i32 0, i32 0, i32 0)
  %518 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %452, <8 x bfloat> %472, <4 x float> %510, i32 0, i32 0, i32 0)
  %519 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %452, <8 x bfloat> %480, <4 x float> %511, i32 0, i32 0, i32 0)
  %520 = tail call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat> %452, <8 x bfloat> %488, <4 x float> %512, i32 0, i32 0, i32 0)
  %521 = shufflevector <4 x float> %513, <4 x float> poison, <1 x i32> zeroinitializer
  %522 = shufflevector <4 x float> %513, <4 x float> poison, <1 x i32> <i32 1>
  %523 = shufflevector <4 x float> %513, <4 x float> poison, <1 x i32> <i32 2>
  %524 = shufflevector <4 x float> %513, <4 x float> poison, <1 x i32> <i32 3>
  %525 = shufflevector <4 x float> %514, <4 x float> poison, <1 x i32> zeroinitializer
  %526 = shufflevector <4 x float> %514, <4 x float> poison, <1 x i32> <i32 1>
  %527 = shufflevector <4 x float> %514, <4 x float> poison, <1 x i32> <i32 2>
  %528 = shufflevector <4 x float> %514, <4 x float> poison, <1 x i32> <i32 3>
  %529 = shufflevector <4 x float> %515, <4 x float> poison, <1 x i32> zeroinitializer
  %530 = shufflevector <4 x float> %515, <4 x float> poison, <1 x i32> <i32 1>
  %531 = shufflevector <4 x float> %515, <4 x float> poison, <1 x i32> <i32 2>
  %532 = shufflevector <4 x float> %515, <4 x float> poison, <1 x i32> <i32 3>
  %533 = shufflevector <4 x float> %516, <4 x float> poison, <1 x i32> zeroinitializer
  %534 = shufflevector <4 x float> %516, <4 x float> poison, <1 x i32> <i32 1>
  %535 = shufflevector <4 x float> %516, <4 x float> poison, <1 x i32> <i32 2>
  %536 = shufflevector <4 x float> %516, <4 x float> poison, <1 x i32> <i32 3>
  %537 = shufflevector <4 x float> %517, <4 x float> poison, <1 x i32> zeroinitializer
  %538 = shufflevector <4 x float> %517, <4 x float> poison, <1 x i32> <i32 1>
  %539 = shufflevector <4 x float> %517, <4 x float> poison, <1 x i32> <i32 2>
  %540 = shufflevector <4 x float> %517, <4 x float> poison, <1 x i32> <i32 3>
  %541 = shufflevector <4 x float> %518, <4 x float> poison, <1 x i32> zeroinitializer
  %542 = shufflevector <4 x float> %518, <4 x float> poison, <1 x i32> <i32 1>
  %543 = shufflevector <4 x float> %518, <4 x float> poison, <1 x i32> <i32 2>
  %544 = shufflevector <4 x float> %518, <4 x float> poison, <1 x i32> <i32 3>
  %545 = shufflevector <4 x float> %519, <4 x float> poison, <1 x i32> zeroinitializer
  %546 = shufflevector <4 x float> %519, <4 x float> poison, <1 x i32> <i32 1>
  %547 = shufflevector <4 x float> %519, <4 x float> poison, <1 x i32> <i32 2>
  %548 = shufflevector <4 x float> %519, <4 x float> poison, <1 x i32> <i32 3>
  %549 = shufflevector <4 x float> %520, <4 x float> poison, <1 x i32> zeroinitializer
  %550 = shufflevector <4 x float> %520, <4 x float> poison, <1 x i32> <i32 1>
  %551 = shufflevector <4 x float> %520, <4 x float> poison, <1 x i32> <i32 2>
  %552 = shufflevector <4 x float> %520, <4 x float> poison, <1 x i32> <i32 3>
  %553 = or disjoint i32 %431, %430
  %554 = or disjoint i32 %553, %104
  %555 = or disjoint i32 %109, %27
  %.idx21 = shl nuw nsw i32 %554, 11
  %556 = getelementptr i8, ptr addrspace(7) %432, i32 %.idx21
  %557 = getelementptr [4 x i8], ptr addrspace(7) %556, i32 %555
  store <1 x float> %521, ptr addrspace(7) %557, align 4
  %558 = or disjoint i32 %555, 16
  %559 = getelementptr [4 x i8], ptr addrspace(7) %556, i32 %558
  store <1 x float> %525, ptr addrspace(7) %559, align 4
  %560 = or disjoint i32 %555, 32
  %561 = getelementptr [4 x i8], ptr addrspace(7) %556, i32 %560
  store <1 x float> %529, ptr addrspace(7) %561, align 4
  %562 = or disjoint i32 %555, 48
  %563 = getelementptr [4 x i8], ptr addrspace(7) %556, i32 %562
  store <1 x float> %533, ptr addrspace(7) %563, align 4
  %564 = getelementptr i8, ptr addrspace(7) %556, i32 2048
  %565 = getelementptr [4 x i8], ptr addrspace(7) %564, i32 %555
  store <1 x float> %522, ptr addrspace(7) %565, align 4
  %566 = getelementptr [4 x i8], ptr addrspace(7) %564, i32 %558
  store <1 x float> %526, ptr addrspace(7) %566, align 4
  %567 = getelementptr [4 x i8], ptr addrspace(7) %564, i32 %560
  store <1 x float> %530, ptr addrspace(7) %567, align 4
  %568 = getelementptr [4 x i8], ptr addrspace(7) %564, i32 %562
  store <1 x float> %534, ptr addrspace(7) %568, align 4
  %569 = getelementptr i8, ptr addrspace(7) %556, i32 4096
  %570 = getelementptr [4 x i8], ptr addrspace(7) %569, i32 %555
  store <1 x float> %523, ptr addrspace(7) %570, align 4
  %571 = getelementptr [4 x i8], ptr addrspace(7) %569, i32 %558
  store <1 x float> %527, ptr addrspace(7) %571, align 4
  %572 = getelementptr [4 x i8], ptr addrspace(7) %569, i32 %560
  store <1 x float> %531, ptr addrspace(7) %572, align 4
  %573 = getelementptr [4 x i8], ptr addrspace(7) %569, i32 %562
  store <1 x float> %535, ptr addrspace(7) %573, align 4
  %574 = getelementptr i8, ptr addrspace(7) %556, i32 6144
  %575 = getelementptr [4 x i8], ptr addrspace(7) %574, i32 %555
  store <1 x float> %524, ptr addrspace(7) %575, align 4
  %576 = getelementptr [4 x i8], ptr addrspace(7) %574, i32 %558
  store <1 x float> %528, ptr addrspace(7) %576, align 4
  %577 = getelementptr [4 x i8], ptr addrspace(7) %574, i32 %560
  store <1 x float> %532, ptr addrspace(7) %577, align 4
  %578 = getelementptr [4 x i8], ptr addrspace(7) %574, i32 %562
  store <1 x float> %536, ptr addrspace(7) %578, align 4
  %579 = getelementptr i8, ptr addrspace(7) %556, i32 32768
  %580 = getelementptr [4 x i8], ptr addrspace(7) %579, i32 %555
  store <1 x float> %537, ptr addrspace(7) %580, align 4
  %581 = getelementptr [4 x i8], ptr addrspace(7) %579, i32 %558
  store <1 x float> %541, ptr addrspace(7) %581, align 4
  %582 = getelementptr [4 x i8], ptr addrspace(7) %579, i32 %560
  store <1 x float> %545, ptr addrspace(7) %582, align 4
  %583 = getelementptr [4 x i8], ptr addrspace(7) %579, i32 %562
  store <1 x float> %549, ptr addrspace(7) %583, align 4
  %584 = getelementptr i8, ptr addrspace(7) %556, i32 34816
  %585 = getelementptr [4 x i8], ptr addrspace(7) %584, i32 %555
  store <1 x float> %538, ptr addrspace(7) %585, align 4
  %586 = getelementptr [4 x i8], ptr addrspace(7) %584, i32 %558
  store <1 x float> %542, ptr addrspace(7) %586, align 4
  %587 = getelementptr [4 x i8], ptr addrspace(7) %584, i32 %560
  store <1 x float> %546, ptr addrspace(7) %587, align 4
  %588 = getelementptr [4 x i8], ptr addrspace(7) %584, i32 %562
  store <1 x float> %550, ptr addrspace(7) %588, align 4
  %589 = getelementptr i8, ptr addrspace(7) %556, i32 36864
  %590 = getelementptr [4 x i8], ptr addrspace(7) %589, i32 %555
  store <1 x float> %539, ptr addrspace(7) %590, align 4
  %591 = getelementptr [4 x i8], ptr addrspace(7) %589, i32 %558
  store <1 x float> %543, ptr addrspace(7) %591, align 4
  %592 = getelementptr [4 x i8], ptr addrspace(7) %589, i32 %560
  store <1 x float> %547, ptr addrspace(7) %592, align 4
  %593 = getelementptr [4 x i8], ptr addrspace(7) %589, i32 %562
  store <1 x float> %551, ptr addrspace(7) %593, align 4
  %594 = getelementptr i8, ptr addrspace(7) %556, i32 38912
  %595 = getelementptr [4 x i8], ptr addrspace(7) %594, i32 %555
  store <1 x float> %540, ptr addrspace(7) %595, align 4
  %596 = getelementptr [4 x i8], ptr addrspace(7) %594, i32 %558
  store <1 x float> %544, ptr addrspace(7) %596, align 4
  %597 = getelementptr [4 x i8], ptr addrspace(7) %594, i32 %560
  store <1 x float> %548, ptr addrspace(7) %597, align 4
  %598 = getelementptr [4 x i8], ptr addrspace(7) %594, i32 %562
  store <1 x float> %552, ptr addrspace(7) %598, align 4
  ret void
}

; Function Attrs: alwaysinline mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 0, 1024) i32 @llvm.amdgcn.workitem.id.x() #1

; Function Attrs: alwaysinline mustprogress nocallback nofree nosync nounwind willreturn memory(inaccessiblemem: write)
declare void @llvm.assume(i1 noundef) #2

; Function Attrs: alwaysinline mustprogress nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none)
declare ptr addrspace(7) @llvm.amdgcn.make.buffer.rsrc.p7.p1(ptr addrspace(1) readnone, i16, i64, i32) #3

; Function Attrs: alwaysinline mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef i32 @llvm.amdgcn.workgroup.id.x() #1

; Function Attrs: alwaysinline mustprogress nocallback nofree nounwind willreturn memory(argmem: readwrite)
declare void @llvm.amdgcn.load.async.to.lds.p7(ptr addrspace(7) readonly captures(none), ptr addrspace(3) writeonly captures(none), i32 immarg, i32 immarg, i32 immarg) #4

; Function Attrs: alwaysinline nounwind
declare void @llvm.amdgcn.asyncmark() #5

; Function Attrs: alwaysinline nounwind
declare void @llvm.amdgcn.wait.asyncmark(i16 immarg) #5

; Function Attrs: alwaysinline convergent mustprogress nocallback nofree nounwind willreturn
declare void @llvm.amdgcn.s.barrier() #6

; Function Attrs: alwaysinline convergent mustprogress nocallback nocreateundeforpoison nofree nosync nounwind willreturn memory(none)
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.bf16(<8 x bfloat>, <8 x bfloat>, <4 x float>, i32 immarg, i32 immarg, i32 immarg) #7

attributes #0 = { alwaysinline nounwind "amdgpu-flat-work-group-size"="256,256" "uniform-work-group-size" }
attributes #1 = { alwaysinline mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none) }
attributes #2 = { alwaysinline mustprogress nocallback nofree nosync nounwind willreturn memory(inaccessiblemem: write) }
attributes #3 = { alwaysinline mustprogress nocallback nocreateundeforpoison nofree nosync nounwind speculatable willreturn memory(none) }
attributes #4 = { alwaysinline mustprogress nocallback nofree nounwind willreturn memory(argmem: readwrite) }
attributes #5 = { alwaysinline nounwind }
attributes #6 = { alwaysinline convergent mustprogress nocallback nofree nounwind willreturn }
attributes #7 = { alwaysinline convergent mustprogress nocallback nocreateundeforpoison nofree nosync nounwind willreturn memory(none) }

!llvm.module.flags = !{!0, !1}

!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = !{i32 1, !"amdhsa_code_object_version", i32 500}
!2 = !{i32 256, i32 1, i32 1}
!3 = !{!"amdgpu-synchronize-as", !"local"}
