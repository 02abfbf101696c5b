/* A stand-in for the CUDA driver API's header, with only what benches/cuda/driver_replay.c calls, so that it can be
 * built and tested without CUDA (scripts/test_driver_replay.py, against stub_cuda.c). Not NVIDIA's header: the
 * names and signatures are the driver API's, the values are this stub's own. */
#ifndef MEMCARVE_STUB_CUDA_H
#define MEMCARVE_STUB_CUDA_H

#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct stub_context *CUcontext;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_SUPPORTED = 801,
};

typedef enum { CU_MEM_ALLOCATION_TYPE_PINNED = 1 } CUmemAllocationType;
typedef enum { CU_MEM_LOCATION_TYPE_DEVICE = 1 } CUmemLocationType;
typedef enum { CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3 } CUmemAccess_flags;
typedef enum { CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0 } CUmemAllocationGranularity_flags;

typedef struct {
    CUmemLocationType type;
    int id;
} CUmemLocation;

typedef struct {
    CUmemAllocationType type;
    CUmemLocation location;
} CUmemAllocationProp;

typedef struct {
    CUmemLocation location;
    CUmemAccess_flags flags;
} CUmemAccessDesc;

CUresult cuGetErrorName(CUresult error, const char **name);
CUresult cuInit(unsigned int flags);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device);
CUresult cuDevicePrimaryCtxRelease(CUdevice device);
CUresult cuCtxSetCurrent(CUcontext context);
CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option);
CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags);
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count);
CUresult cuMemAlloc(CUdeviceptr *ptr, size_t size);
CUresult cuMemFree(CUdeviceptr ptr);

#endif
