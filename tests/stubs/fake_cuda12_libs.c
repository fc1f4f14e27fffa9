/* SPDX-License-Identifier: Apache-2.0 */
/* What the CUDA 12 library stand-ins must really do (tests only), built with
 * fake_stub_syms.c into each library; FAKE_LIB_<soname with _ for .> says
 * which. cuBLAS and cuBLASLt hand out handles and succeed without computing
 * (every nn.Linear of PyTorch calls them); the others only load, answer their
 * version and name their errors. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

/* A handle: distinct, freed on destroy, never looked into by the caller. */
__attribute__((unused)) static void *new_handle(size_t size) {
    return calloc(1, size < 16 ? 16 : size);
}

#if defined(FAKE_LIB_libcublas_so_12)
/* ---- cuBLAS: handles and their settings; every operation succeeds ---- */
struct cublas_ctx {
    void *stream;
    int math_mode;
    int pointer_mode;
    void *workspace;
    size_t workspace_size;
};
typedef struct cublas_ctx *cublasHandle_t;
#define CUBLAS_STATUS_SUCCESS 0
#define CUBLAS_STATUS_NOT_INITIALIZED 1
#define CUBLAS_STATUS_ALLOC_FAILED 3
#define CUBLAS_STATUS_INVALID_VALUE 7

API int cublasCreate_v2(cublasHandle_t *handle) {
    if (handle == NULL) return CUBLAS_STATUS_INVALID_VALUE;
    *handle = new_handle(sizeof **handle);
    return *handle != NULL ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

API int cublasDestroy_v2(cublasHandle_t handle) {
    if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasSetStream_v2(cublasHandle_t handle, void *stream) {
    if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasGetStream_v2(cublasHandle_t handle, void **stream) {
    if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (stream == NULL) return CUBLAS_STATUS_INVALID_VALUE;
    *stream = handle->stream;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasSetMathMode(cublasHandle_t handle, int mode) {
    if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->math_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasGetMathMode(cublasHandle_t handle, int *mode) {
    if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode == NULL) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->math_mode;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasSetPointerMode_v2(cublasHandle_t handle, int mode) {
    if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasGetPointerMode_v2(cublasHandle_t handle, int *mode) {
    if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode == NULL) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace, size_t size) {
    if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->workspace = workspace;
    handle->workspace_size = size;
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasGetVersion_v2(cublasHandle_t handle, int *version) {
    if (version == NULL) return CUBLAS_STATUS_INVALID_VALUE;
    *version = 120402; /* 12.4.2 */
    return CUBLAS_STATUS_SUCCESS;
}

#elif defined(FAKE_LIB_libcublasLt_so_12)
/* ---- cuBLASLt: descriptors, and one algorithm for every problem ---- */
#define CUBLAS_STATUS_SUCCESS 0
#define CUBLAS_STATUS_ALLOC_FAILED 3
#define CUBLAS_STATUS_INVALID_VALUE 7

static int create(void **out, size_t size) {
    if (out == NULL) return CUBLAS_STATUS_INVALID_VALUE;
    *out = new_handle(size);
    return *out != NULL ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

static int destroy(void *h) {
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

API int cublasLtCreate(void **handle) {
    return create(handle, 64);
}
API int cublasLtDestroy(void *handle) {
    return destroy(handle);
}
API int cublasLtMatmulDescCreate(void **desc, int computeType, int scaleType) {
    return create(desc, 64);
}
API int cublasLtMatmulDescDestroy(void *desc) {
    return destroy(desc);
}
API int cublasLtMatrixLayoutCreate(void **layout, int type, uint64_t rows, uint64_t cols,
                                   int64_t ld) {
    return create(layout, 64);
}
API int cublasLtMatrixLayoutDestroy(void *layout) {
    return destroy(layout);
}
API int cublasLtMatmulPreferenceCreate(void **pref) {
    return create(pref, 64);
}
API int cublasLtMatmulPreferenceDestroy(void *pref) {
    return destroy(pref);
}

/* cublasLtMatmulHeuristicResult_t */
struct heuristic_result {
    uint64_t algo[8];
    size_t workspaceSize;
    int state;
    float wavesCount;
    int reserved[4];
};

API int cublasLtMatmulAlgoGetHeuristic(void *handle, void *desc, void *a, void *b, void *c, void *d,
                                       void *pref, int requestedAlgoCount,
                                       struct heuristic_result *results, int *returnAlgoCount) {
    if (results == NULL || returnAlgoCount == NULL || requestedAlgoCount < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    memset(&results[0], 0, sizeof results[0]);
    results[0].algo[0] = 1;
    results[0].workspaceSize = 0; /* needs no workspace: fits any limit */
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *returnAlgoCount = 1;
    return CUBLAS_STATUS_SUCCESS;
}

API size_t cublasLtGetVersion(void) {
    return 120402;
}

#elif defined(FAKE_LIB_libcudnn_so_9)
/* ---- cuDNN 9: loads, tells its version; operations are not supported ---- */
#define CUDNN_STATUS_SUCCESS 0
#define CUDNN_STATUS_BAD_PARAM 2000
#define CUDNN_STATUS_ALLOC_FAILED 4000

API size_t cudnnGetVersion(void) {
    return 91000; /* 9.10.0: a newer minor than any 9.x PyTorch was built with */
}

API size_t cudnnGetCudartVersion(void) {
    return 12040;
}

API int cudnnGetProperty(int type, int *value) {
    static const int parts[3] = {9, 10, 0}; /* MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL */
    if (value == NULL || type < 0 || type > 2) return CUDNN_STATUS_BAD_PARAM;
    *value = parts[type];
    return CUDNN_STATUS_SUCCESS;
}

API const char *cudnnGetErrorString(int status) {
    return status == CUDNN_STATUS_SUCCESS ? "CUDNN_STATUS_SUCCESS"
                                          : "CUDNN_STATUS_NOT_SUPPORTED (leakwatch's stand-in)";
}

API void cudnnGetLastErrorString(char *message, size_t max_size) {
    if (message != NULL && max_size > 0) message[0] = '\0';
}

API int cudnnCreate(void **handle) {
    if (handle == NULL) return CUDNN_STATUS_BAD_PARAM;
    *handle = new_handle(64);
    return *handle != NULL ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;
}

API int cudnnDestroy(void *handle) {
    free(handle);
    return CUDNN_STATUS_SUCCESS;
}

#elif defined(FAKE_LIB_libnccl_so_2)
/* ---- NCCL 2: loads, tells its version; collectives are not supported ---- */
API int ncclGetVersion(int *version) {
    if (version == NULL) return 4; /* ncclInvalidArgument */
    *version = 22105;              /* 2.21.5 */
    return 0;
}

API const char *ncclGetErrorString(int result) {
    return result == 0 ? "no error" : "operation not supported by leakwatch's NCCL stand-in";
}

API const char *ncclGetLastError(void *comm) {
    return "";
}

#elif defined(FAKE_LIB_libnvrtc_so_12)
/* ---- NVRTC 12: loads, tells its version; compiling is not supported ---- */
API int nvrtcVersion(int *major, int *minor) {
    if (major == NULL || minor == NULL) return 3; /* NVRTC_ERROR_INVALID_INPUT */
    *major = 12;
    *minor = 4;
    return 0;
}

API const char *nvrtcGetErrorString(int result) {
    return result == 0 ? "NVRTC_SUCCESS" : "NVRTC_ERROR_INTERNAL_ERROR (leakwatch's stand-in)";
}

#elif defined(FAKE_LIB_libcurand_so_10)
API int curandGetVersion(int *version) {
    if (version == NULL) return 201; /* CURAND_STATUS_NOT_INITIALIZED */
    *version = 10305;
    return 0;
}

#else
/* cuFFT, cuSPARSE, cuSOLVER, nvToolsExt: the generated functions only. */
typedef int fake_cuda12_libs_empty;
#endif
