/* SPDX-License-Identifier: Apache-2.0 */
/* A program that never touches CUDA, run under the shim: it must see nothing
 * of leakwatch (no file, no output, no thread). It looks symbols up, loads a
 * library and runs a child, as compilers and shells do. */
#include "../test_exec.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int count_threads(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

int main(int argc, char **argv) {
    void *m = dlopen("libm.so.6", RTLD_NOW);
    double (*cosine)(double) = m ? (double (*)(double))dlsym(m, "cos") : NULL;
    void *strlen_fn = dlsym(RTLD_DEFAULT, "strlen");
    void *next = dlsym(RTLD_NEXT, "printf");
    if (!cosine || !strlen_fn || !next) return 3;
    /* A CUDA-looking name that no library here defines: no error, no output. */
    if (dlsym(RTLD_DEFAULT, "cuMemAlloc_v3") != NULL) return 4;
    /* Names leakwatch exports: without CUDA libraries they must not be found,
     * as without leakwatch (programs probe for CUDA this way). */
    if (dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") != NULL) return 7;
    if (dlsym(RTLD_DEFAULT, "cudaMalloc") != NULL) return 8;
    if (argc > 1 && !strcmp(argv[1], "child")) return 0;
    pid_t pid = fork();
    if (pid == 0) {
        /* Through $LW_TEST_EXEC when the tests run under an emulator. */
        char *cmd[20];
        int n = lw_test_exec_prefix(argv[0], cmd, 16);
        cmd[n++] = argv[0];
        cmd[n++] = "child";
        cmd[n] = NULL;
        execv(cmd[0], cmd);
        _exit(5);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 6;
    printf("threads %d\n", count_threads());
    return 0;
}
