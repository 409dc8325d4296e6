"""GEMM problems, schedules and the transform-dialect IR built from them with IREE's MLIR Python bindings."""
