/* A stand-in CUDA driver for testing benches/cuda/driver_replay.c without a GPU (scripts/test_driver_replay.py).
 * It keeps books only, and refuses what the H200's driver refused when the calls were made for real
 * (docs/BENCHMARKS.md, "Twenty-ninth session"): a mapping at an offset in its handle or of part of it
 * (CUDA_ERROR_NOT_SUPPORTED); mapping over a mapped page, setting access on or unmapping a page that is not mapped,
 * an unmap that covers part of a mapping, freeing a reservation with pages still mapped (CUDA_ERROR_INVALID_VALUE).
 * Granularity 2 MiB. */
#include <stdlib.h>

#include "cuda.h"

#define GRANULARITY (2ull << 20)
#define RESERVATIONS 8

/* One reservation: per page, the mapping it belongs to (0: unmapped) and that mapping's handle. */
struct reservation {
    CUdeviceptr base;
    size_t pages;
    unsigned long long *mapping;
    CUmemGenericAllocationHandle *handle;
};

struct handle_record {
    size_t size;
    int released;
};

static struct reservation reservations[RESERVATIONS];
static struct handle_record *handles;
static size_t handle_count, handle_capacity;
static unsigned long long next_mapping = 1;
static CUdeviceptr next_address = 1ull << 40;
static CUdeviceptr *allocations;
static size_t allocation_count, allocation_capacity;

CUresult cuGetErrorName(CUresult error, const char **name) {
    switch (error) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; break;
    default: *name = "CUDA_ERROR_UNKNOWN"; break;
    }
    return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int flags) { return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    *device = ordinal;
    return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
    *context = NULL;
    return device == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice device) { return device == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

CUresult cuCtxSetCurrent(CUcontext context) {
    (void)context;
    return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option) {
    (void)prop;
    (void)option;
    *granularity = GRANULARITY;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
    (void)alignment;
    if (size == 0 || size % GRANULARITY != 0 || addr != 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < RESERVATIONS; i++) {
        struct reservation *r = &reservations[i];
        if (r->pages != 0) continue;
        r->pages = size / GRANULARITY;
        r->mapping = calloc(r->pages, sizeof *r->mapping);
        r->handle = calloc(r->pages, sizeof *r->handle);
        if (!r->mapping || !r->handle) return CUDA_ERROR_OUT_OF_MEMORY;
        r->base = next_address;
        next_address += size + GRANULARITY; /* apart from the next one */
        *ptr = r->base;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* The reservation holding `[ptr, ptr + size)` (aligned, non-empty), and the range's first page in it. */
static struct reservation *find(CUdeviceptr ptr, size_t size, size_t *first) {
    if (size == 0 || ptr % GRANULARITY != 0 || size % GRANULARITY != 0) return NULL;
    for (int i = 0; i < RESERVATIONS; i++) {
        struct reservation *r = &reservations[i];
        if (r->pages != 0 && ptr >= r->base && ptr + size <= r->base + r->pages * GRANULARITY) {
            *first = (ptr - r->base) / GRANULARITY;
            return r;
        }
    }
    return NULL;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    size_t first;
    struct reservation *r = find(ptr, size, &first);
    if (!r || first != 0 || size != r->pages * GRANULARITY) return CUDA_ERROR_INVALID_VALUE;
    for (size_t page = 0; page < r->pages; page++) {
        if (r->mapping[page] != 0) return CUDA_ERROR_INVALID_VALUE;
    }
    free(r->mapping);
    free(r->handle);
    r->pages = 0;
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags) {
    if (size == 0 || size % GRANULARITY != 0 || !prop || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (handle_count == handle_capacity) {
        handle_capacity = handle_capacity ? 2 * handle_capacity : 64;
        struct handle_record *grown = realloc(handles, handle_capacity * sizeof *handles);
        if (!grown) return CUDA_ERROR_OUT_OF_MEMORY;
        handles = grown;
    }
    handles[handle_count] = (struct handle_record){size, 0};
    *handle = ++handle_count; /* handles are 1-based: 0 is never one */
    return CUDA_SUCCESS;
}

static struct handle_record *live_handle(CUmemGenericAllocationHandle handle) {
    if (handle == 0 || handle > handle_count || handles[handle - 1].released) return NULL;
    return &handles[handle - 1];
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
    struct handle_record *h = live_handle(handle);
    if (!h) return CUDA_ERROR_INVALID_VALUE;
    h->released = 1; /* its memory goes once its last mapping does, as the driver's */
    return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
    size_t first;
    struct reservation *r = find(ptr, size, &first);
    struct handle_record *h = live_handle(handle);
    if (!r || !h || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    /* A handle maps whole, from its start. */
    if (offset != 0 || size != h->size) return CUDA_ERROR_NOT_SUPPORTED;
    size_t count = size / GRANULARITY;
    for (size_t page = first; page < first + count; page++) {
        if (r->mapping[page] != 0) return CUDA_ERROR_INVALID_VALUE;
    }
    unsigned long long mapping = next_mapping++;
    for (size_t page = first; page < first + count; page++) {
        r->mapping[page] = mapping;
        r->handle[page] = handle;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
    size_t first;
    struct reservation *r = find(ptr, size, &first);
    if (!r || !desc || count == 0) return CUDA_ERROR_INVALID_VALUE;
    for (size_t page = first; page < first + size / GRANULARITY; page++) {
        if (r->mapping[page] == 0) return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
    size_t first;
    struct reservation *r = find(ptr, size, &first);
    if (!r) return CUDA_ERROR_INVALID_VALUE;
    size_t end = first + size / GRANULARITY;
    for (size_t page = first; page < end; page++) {
        if (r->mapping[page] == 0) return CUDA_ERROR_INVALID_VALUE;
    }
    /* Whole mappings only: the pages on either side must belong to other mappings. */
    if (first > 0 && r->mapping[first - 1] == r->mapping[first]) return CUDA_ERROR_INVALID_VALUE;
    if (end < r->pages && r->mapping[end] == r->mapping[end - 1]) return CUDA_ERROR_INVALID_VALUE;
    for (size_t page = first; page < end; page++) {
        r->mapping[page] = 0;
        r->handle[page] = 0;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *ptr, size_t size) {
    if (size == 0) return CUDA_ERROR_INVALID_VALUE;
    if (allocation_count == allocation_capacity) {
        allocation_capacity = allocation_capacity ? 2 * allocation_capacity : 64;
        CUdeviceptr *grown = realloc(allocations, allocation_capacity * sizeof *allocations);
        if (!grown) return CUDA_ERROR_OUT_OF_MEMORY;
        allocations = grown;
    }
    *ptr = next_address;
    next_address += (size + GRANULARITY - 1) / GRANULARITY * GRANULARITY;
    allocations[allocation_count++] = *ptr;
    return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr ptr) {
    for (size_t i = 0; i < allocation_count; i++) {
        if (allocations[i] == ptr) {
            allocations[i] = allocations[--allocation_count];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}
