/* The physical memory benches/cuda's programs ask CUDA for, so that what one measures is what the other replays:
 * pinned memory of `device` (the heap's pages, PyTorch's expandable segments), readable and writable by it. */
#ifndef MEMCARVE_BENCHES_DEVICE_MEMORY_H
#define MEMCARVE_BENCHES_DEVICE_MEMORY_H

#include <string.h>

#include <cuda.h>

static void device_memory(CUdevice device, CUmemAllocationProp *prop, CUmemAccessDesc *access) {
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = device;
    memset(access, 0, sizeof *access);
    access->location = prop->location;
    access->flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
}

#endif
