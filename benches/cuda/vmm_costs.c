/* What CUDA's virtual memory calls cost on this GPU, for the virtual heap's page size and its count of driver
 * operations (docs/BENCHMARKS.md, "What an operation will cost on CUDA"). Driver API only; build and run on the
 * GPU machine:
 *
 *   gcc -O2 -std=c11 benches/cuda/vmm_costs.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda \
 *       -o vmm_costs && ./vmm_costs
 *
 * Prints, for physical pages of 2 to 32 MiB, the median time of each call of one page's life (create, map, set
 * access, unmap, release); the cost of showing 64 pages of 2 MiB in one contiguous range (one handle per page, as
 * the heap's pages are, against one handle for the whole range); whether one cuMemUnmap may cover several
 * mappings, and part of one; whether a mapping may start at an offset in its handle, or take only its first part;
 * what showing a whole handle of 64 MiB at a second address costs; whether a physical page mapped at two addresses
 * shows the same bytes at both; and, for comparison, what cuMemAlloc and cuMemFree (PyTorch's segments without
 * expandable segments) cost by size, also beside 64 GiB already allocated, with a handle's life by size there and
 * allocations of a new size each, kept. */
#define _POSIX_C_SOURCE 199309L
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device_memory.h"

#define MIB (1ull << 20)
#define REPS 41
#define RANGE_PAGES 64

static void check(CUresult result, const char *what) {
    if (result != CUDA_SUCCESS) {
        const char *name = NULL;
        cuGetErrorName(result, &name);
        fprintf(stderr, "%s failed: %s\n", what, name ? name : "?");
        exit(1);
    }
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int count) {
    qsort(values, count, sizeof *values, by_value);
    return values[count / 2];
}

static CUmemAllocationProp prop;
static CUmemAccessDesc access_desc;

static CUmemGenericAllocationHandle create(size_t size) {
    CUmemGenericAllocationHandle handle;
    check(cuMemCreate(&handle, size, &prop, 0), "cuMemCreate");
    return handle;
}

/* One cuMemAlloc of `size` and its cuMemFree, timed. */
static void alloc_and_free(size_t size, double *alloc_us, double *free_us) {
    CUdeviceptr pointer;
    double t0 = now_us();
    check(cuMemAlloc(&pointer, size), "cuMemAlloc");
    double t1 = now_us();
    check(cuMemFree(pointer), "cuMemFree");
    *alloc_us = t1 - t0;
    *free_us = now_us() - t1;
}

int main(void) {
    check(cuInit(0), "cuInit");
    CUdevice device;
    check(cuDeviceGet(&device, 0), "cuDeviceGet");
    CUcontext context;
    check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
    char name[256];
    check(cuDeviceGetName(name, sizeof name, device), "cuDeviceGetName");
    int driver = 0;
    cuDriverGetVersion(&driver);
    printf("device: %s, driver API %d\n", name, driver);

    device_memory(device, &prop, &access_desc);
    size_t minimum = 0, recommended = 0;
    check(cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "granularity");
    check(cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), "granularity");
    printf("granularity: minimum %zu KiB, recommended %zu KiB\n", minimum >> 10, recommended >> 10);

    const size_t reserved = 64ull << 30;
    CUdeviceptr base;
    check(cuMemAddressReserve(&base, reserved, 0, 0, 0), "cuMemAddressReserve");

    /* One page's life, by page size: the median of REPS of each call (the first, cold, included). */
    printf("\npage size | create us | map us | set access us | unmap us | release us | life us | life us per MiB\n");
    const size_t sizes[] = {2 * MIB, 4 * MIB, 8 * MIB, 16 * MIB, 32 * MIB};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t size = sizes[s];
        double times[5][REPS];
        for (int rep = 0; rep < REPS; rep++) {
            double t0 = now_us();
            CUmemGenericAllocationHandle handle = create(size);
            double t1 = now_us();
            check(cuMemMap(base, size, 0, handle, 0), "cuMemMap");
            double t2 = now_us();
            check(cuMemSetAccess(base, size, &access_desc, 1), "cuMemSetAccess");
            double t3 = now_us();
            check(cuMemUnmap(base, size), "cuMemUnmap");
            double t4 = now_us();
            check(cuMemRelease(handle), "cuMemRelease");
            double t5 = now_us();
            times[0][rep] = t1 - t0;
            times[1][rep] = t2 - t1;
            times[2][rep] = t3 - t2;
            times[3][rep] = t4 - t3;
            times[4][rep] = t5 - t4;
        }
        double m[5], life = 0;
        for (int k = 0; k < 5; k++) {
            m[k] = median(times[k], REPS);
            life += m[k];
        }
        printf("%zu MiB | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f\n", (size_t)(size / MIB), m[0], m[1], m[2],
               m[3], m[4], life, life / (double)(size / MIB));
    }

    /* A contiguous range of RANGE_PAGES pages of 2 MiB, shown onto pages that already exist (the heap's map of
     * free pages at fresh addresses): one cuMemMap per handle, then one cuMemSetAccess for the range or one per
     * page; against one handle for the whole range. Unmapped in one cuMemUnmap if the driver allows it. */
    const size_t page = 2 * MIB, range = RANGE_PAGES * page;
    CUmemGenericAllocationHandle handles[RANGE_PAGES];
    for (int i = 0; i < RANGE_PAGES; i++) handles[i] = create(page);
    double map_each[REPS], access_once[REPS], access_each[REPS], unmap_once[REPS];
    int unmap_whole_ok = 1;
    for (int rep = 0; rep < REPS; rep++) {
        double t0 = now_us();
        for (int i = 0; i < RANGE_PAGES; i++) check(cuMemMap(base + i * page, page, 0, handles[i], 0), "cuMemMap");
        double t1 = now_us();
        check(cuMemSetAccess(base, range, &access_desc, 1), "cuMemSetAccess (range)");
        double t2 = now_us();
        CUresult whole = cuMemUnmap(base, range);
        double t3 = now_us();
        if (whole != CUDA_SUCCESS) {
            unmap_whole_ok = 0;
            for (int i = 0; i < RANGE_PAGES; i++) check(cuMemUnmap(base + i * page, page), "cuMemUnmap (page)");
        }
        /* Again with one cuMemSetAccess per page. */
        for (int i = 0; i < RANGE_PAGES; i++) check(cuMemMap(base + i * page, page, 0, handles[i], 0), "cuMemMap");
        double t4 = now_us();
        for (int i = 0; i < RANGE_PAGES; i++)
            check(cuMemSetAccess(base + i * page, page, &access_desc, 1), "cuMemSetAccess (page)");
        double t5 = now_us();
        for (int i = 0; i < RANGE_PAGES; i++) check(cuMemUnmap(base + i * page, page), "cuMemUnmap (page)");
        map_each[rep] = t1 - t0;
        access_once[rep] = t2 - t1;
        access_each[rep] = t5 - t4;
        unmap_once[rep] = t3 - t2;
    }
    printf("\n%d existing pages of 2 MiB shown in one range: %d x cuMemMap %.1f us, one cuMemSetAccess %.1f us, "
           "%d x cuMemSetAccess %.1f us\n",
           RANGE_PAGES, RANGE_PAGES, median(map_each, REPS), median(access_once, REPS), RANGE_PAGES,
           median(access_each, REPS));
    printf("one cuMemUnmap over the %d mappings: %s (%.1f us)\n", RANGE_PAGES, unmap_whole_ok ? "allowed" : "refused",
           median(unmap_once, REPS));
    double whole_life[REPS];
    for (int rep = 0; rep < REPS; rep++) {
        double t0 = now_us();
        CUmemGenericAllocationHandle handle = create(range);
        check(cuMemMap(base, range, 0, handle, 0), "cuMemMap");
        check(cuMemSetAccess(base, range, &access_desc, 1), "cuMemSetAccess");
        double t1 = now_us();
        check(cuMemUnmap(base, range), "cuMemUnmap");
        check(cuMemRelease(handle), "cuMemRelease");
        whole_life[rep] = t1 - t0;
    }
    printf("one handle of %zu MiB: create + map + set access %.1f us\n", (size_t)(range / MIB),
           median(whole_life, REPS));

    /* Part of one mapping: the first 2 MiB of a mapping of 8 MiB. */
    CUmemGenericAllocationHandle big = create(4 * page);
    check(cuMemMap(base, 4 * page, 0, big, 0), "cuMemMap");
    check(cuMemSetAccess(base, 4 * page, &access_desc, 1), "cuMemSetAccess");
    CUresult part = cuMemUnmap(base, page);
    const char *part_name = NULL;
    cuGetErrorName(part, &part_name);
    printf("cuMemUnmap of 2 MiB of an 8 MiB mapping: %s\n", part == CUDA_SUCCESS ? "allowed" : part_name);
    if (part == CUDA_SUCCESS) {
        check(cuMemUnmap(base + page, 3 * page), "cuMemUnmap (rest)");
    } else {
        check(cuMemUnmap(base, 4 * page), "cuMemUnmap (whole)");
    }
    check(cuMemRelease(big), "cuMemRelease");

    /* What a mapping may take of its handle: the second 2 MiB of an 8 MiB handle (an offset), its first 2 MiB
     * alone (a prefix). */
    big = create(4 * page);
    CUresult at_offset = cuMemMap(base, page, page, big, 0);
    const char *offset_name = NULL;
    cuGetErrorName(at_offset, &offset_name);
    printf("cuMemMap of 2 MiB at offset 2 MiB of an 8 MiB handle: %s\n",
           at_offset == CUDA_SUCCESS ? "allowed" : offset_name);
    if (at_offset == CUDA_SUCCESS) check(cuMemUnmap(base, page), "cuMemUnmap (offset)");
    CUresult prefix = cuMemMap(base, page, 0, big, 0);
    const char *prefix_name = NULL;
    cuGetErrorName(prefix, &prefix_name);
    printf("cuMemMap of the first 2 MiB of an 8 MiB handle: %s\n", prefix == CUDA_SUCCESS ? "allowed" : prefix_name);
    if (prefix == CUDA_SUCCESS) {
        check(cuMemSetAccess(base, page, &access_desc, 1), "cuMemSetAccess (prefix)");
        check(cuMemUnmap(base, page), "cuMemUnmap (prefix)");
    }
    check(cuMemRelease(big), "cuMemRelease");

    /* A whole handle of 64 MiB shown at a second address: what aliasing costs by handle rather than by page. */
    big = create(RANGE_PAGES / 2 * page);
    check(cuMemMap(base, RANGE_PAGES / 2 * page, 0, big, 0), "cuMemMap");
    check(cuMemSetAccess(base, RANGE_PAGES / 2 * page, &access_desc, 1), "cuMemSetAccess");
    double alias_us[REPS];
    for (int rep = 0; rep < REPS; rep++) {
        CUdeviceptr second = base + RANGE_PAGES / 2 * page;
        double t0 = now_us();
        check(cuMemMap(second, RANGE_PAGES / 2 * page, 0, big, 0), "cuMemMap (second address)");
        check(cuMemSetAccess(second, RANGE_PAGES / 2 * page, &access_desc, 1), "cuMemSetAccess (second address)");
        alias_us[rep] = now_us() - t0;
        check(cuMemUnmap(second, RANGE_PAGES / 2 * page), "cuMemUnmap (second address)");
    }
    printf("one handle of %zu MiB shown at a second address: map + set access %.1f us\n",
           (size_t)(RANGE_PAGES / 2 * page / MIB), median(alias_us, REPS));
    check(cuMemUnmap(base, RANGE_PAGES / 2 * page), "cuMemUnmap");
    check(cuMemRelease(big), "cuMemRelease");

    /* One physical page at two addresses: bytes written through one are read through the other. */
    check(cuMemMap(base, page, 0, handles[0], 0), "cuMemMap (first address)");
    check(cuMemMap(base + 8 * page, page, 0, handles[0], 0), "cuMemMap (second address)");
    check(cuMemSetAccess(base, page, &access_desc, 1), "cuMemSetAccess");
    check(cuMemSetAccess(base + 8 * page, page, &access_desc, 1), "cuMemSetAccess");
    check(cuMemsetD32(base, 0x5a5aa5a5u, page / 4), "cuMemsetD32");
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    uint32_t *seen = malloc(page);
    check(cuMemcpyDtoH(seen, base + 8 * page, page), "cuMemcpyDtoH");
    size_t same = 0;
    for (size_t i = 0; i < page / 4; i++) same += seen[i] == 0x5a5aa5a5u;
    printf("a page mapped at two addresses: %zu of %zu words written at one read back at the other\n", same,
           (size_t)(page / 4));
    free(seen);
    check(cuMemUnmap(base, page), "cuMemUnmap");
    check(cuMemUnmap(base + 8 * page, page), "cuMemUnmap");
    for (int i = 0; i < RANGE_PAGES; i++) check(cuMemRelease(handles[i]), "cuMemRelease");
    check(cuMemAddressFree(base, reserved), "cuMemAddressFree");

    /* cuMemAlloc + cuMemFree by size. */
    printf("\nsize | cuMemAlloc us | cuMemFree us\n");
    const size_t alloc_sizes[] = {2 * MIB, 20 * MIB, 128 * MIB, 1024 * MIB, 8192 * MIB};
    for (size_t s = 0; s < sizeof alloc_sizes / sizeof *alloc_sizes; s++) {
        double alloc_us[REPS], free_us[REPS];
        for (int rep = 0; rep < REPS; rep++) alloc_and_free(alloc_sizes[s], &alloc_us[rep], &free_us[rep]);
        printf("%zu MiB | %.1f | %.1f\n", (size_t)(alloc_sizes[s] / MIB), median(alloc_us, REPS),
               median(free_us, REPS));
    }

    /* The same beside 64 GiB already allocated, as in a large heap's replay: allocations of one size over and over,
     * then allocations of sizes that change from one to the next and stay (a block mode creating blocks), then a
     * physical handle's life by size. */
    enum { LIVE_GIB = 64, GROWN = 24 };
    CUdeviceptr live[LIVE_GIB];
    for (int i = 0; i < LIVE_GIB; i++) check(cuMemAlloc(&live[i], 1024 * MIB), "cuMemAlloc (live)");
    CUdeviceptr spot;
    check(cuMemAddressReserve(&spot, 2048 * MIB, 0, 0, 0), "cuMemAddressReserve");
    printf("\nbeside %d GiB allocated: size | cuMemAlloc us | cuMemFree us | handle create + map + access us | "
           "unmap + release us\n", LIVE_GIB);
    for (size_t s = 0; s < sizeof alloc_sizes / sizeof *alloc_sizes - 1; s++) {
        double alloc_us[REPS], free_us[REPS], make_us[REPS], drop_us[REPS];
        for (int rep = 0; rep < REPS; rep++) {
            alloc_and_free(alloc_sizes[s], &alloc_us[rep], &free_us[rep]);
            double t2 = now_us();
            CUmemGenericAllocationHandle handle = create(alloc_sizes[s]);
            check(cuMemMap(spot, alloc_sizes[s], 0, handle, 0), "cuMemMap");
            check(cuMemSetAccess(spot, alloc_sizes[s], &access_desc, 1), "cuMemSetAccess");
            double t3 = now_us();
            check(cuMemUnmap(spot, alloc_sizes[s]), "cuMemUnmap");
            check(cuMemRelease(handle), "cuMemRelease");
            double t4 = now_us();
            make_us[rep] = t3 - t2;
            drop_us[rep] = t4 - t3;
        }
        printf("%zu MiB | %.1f | %.1f | %.1f | %.1f\n", (size_t)(alloc_sizes[s] / MIB), median(alloc_us, REPS),
               median(free_us, REPS), median(make_us, REPS), median(drop_us, REPS));
    }
    CUdeviceptr grown[GROWN];
    double grow_us[GROWN];
    for (int i = 0; i < GROWN; i++) {
        size_t size = (size_t)(128 + 40 * i) * MIB; /* 128 MiB to about 1 GiB, each a new size */
        double t0 = now_us();
        check(cuMemAlloc(&grown[i], size), "cuMemAlloc (grown)");
        grow_us[i] = now_us() - t0;
    }
    for (int i = 0; i < GROWN; i++) check(cuMemFree(grown[i]), "cuMemFree (grown)");
    printf("%d allocations of a new size each (128 MiB to 1 GiB), kept: cuMemAlloc median %.1f us\n", GROWN,
           median(grow_us, GROWN));
    check(cuMemAddressFree(spot, 2048 * MIB), "cuMemAddressFree");
    for (int i = 0; i < LIVE_GIB; i++) check(cuMemFree(live[i]), "cuMemFree (live)");
    check(cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
    return 0;
}
