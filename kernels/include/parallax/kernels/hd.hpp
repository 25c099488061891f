#pragma once
// PX_HD marks element-wise math that both backends compile: empty on the CPU build, __host__
// __device__ when nvcc compiles the CUDA backend.
#if defined(__CUDACC__)
#define PX_HD __host__ __device__
#else
#define PX_HD
#endif
