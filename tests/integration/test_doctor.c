/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch doctor: its probes under the shim, on the CPU stand-ins (this
 * machine has no GPU), and what it says when no driver is there. */
#include "../check_run.h"
#include "harness_cli.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define HAS(r, text)                                                                               \
    ck_assert_msg(strstr((r)->out, text), "no \"%s\" in:\n%s%s", text, (r)->out, (r)->err)

START_TEST(doctor_on_the_stand_ins) {
    char libs[4200];
    snprintf(libs, sizeof libs, "%s/tests/lib", lw_build_dir());
    const char *args[] = {"doctor", "--cuda-libs", libs, "--python", "/nonexistent/python3", NULL};
    lw_run r;
    lw_cli_run(&r, args, NULL);
    ck_assert_msg(r.exit_code == 0, "exit %d\n%s%s", r.exit_code, r.out, r.err);
    HAS(&r, "CPU stand-in, not NVIDIA's");
    HAS(&r, "GPU: none (the probes ran on leakwatch's CPU stand-ins");
    /* Each path, with the probe's exact bytes. */
    HAS(&r, "ok      runtime (cudaMalloc): 3145728 bytes");
    HAS(&r, "ok      driver (cuMemAlloc): 5242880 bytes");
    HAS(&r, "ok      stream-ordered pool (cudaMallocAsync): 7340032 bytes");
    HAS(&r, "ok      virtual memory (cuMemCreate): 4194304 bytes");
    HAS(&r, "ok      call stacks");
    HAS(&r, "skipped PyTorch: /nonexistent/python3 not found");
    HAS(&r, "all is well (no GPU here");
    ck_assert_ptr_null(strstr(r.out, "MISSING"));
    lw_run_free(&r);
}
END_TEST

START_TEST(doctor_with_cuda_stand_ins) {
    const char *args[] = {"doctor", "--cuda-stand-ins", "--python", "/nonexistent/python3", NULL};
    lw_run r;
    lw_cli_run(&r, args, NULL);
    ck_assert_msg(r.exit_code == 0, "exit %d\n%s%s", r.exit_code, r.out, r.err);
    HAS(&r, "ok      runtime (cudaMalloc): 3145728 bytes");
    HAS(&r, "all is well (no GPU here");
    lw_run_free(&r);
}
END_TEST

START_TEST(doctor_without_a_driver) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen("libcuda.so.1", RTLD_LAZY);
    if (h) {
        fprintf(stderr, "test_doctor: a libcuda.so.1 is installed: no-driver case skipped\n");
        dlclose(h);
        return;
    }
    const char *env[] = {"LD_LIBRARY_PATH=/nonexistent", NULL};
    const char *args[] = {"doctor", "--python", "/nonexistent/python3", NULL};
    lw_run r;
    lw_cli_run(&r, args, env);
    ck_assert_int_eq(r.exit_code, 1);
    HAS(&r, "MISSING CUDA driver: libcuda.so.1 cannot be loaded");
    HAS(&r, "so no GPU");
    HAS(&r, "--cuda-stand-ins");
    lw_run_free(&r);
}
END_TEST

/* A driver whose cuInit hangs: doctor stops the probe at its time limit and
 * says so (it was silent for 122 s, then blamed the library, and pointed to
 * a log in a folder it had deleted); the log it names is there. */
START_TEST(doctor_with_a_hanging_driver) {
    const char *env[] = {"FAKE_CUDA_INIT_HANG_MS=600000", NULL};
    const char *args[] = {
        "doctor", "--cuda-stand-ins", "--python", "/nonexistent/python3", "--timeout", "2", NULL};
    lw_run r;
    lw_cli_run(&r, args, env);
    ck_assert_msg(r.exit_code == 1, "exit %d\n%s%s", r.exit_code, r.out, r.err);
    HAS(&r, "the probe did not finish in 2 s");
    HAS(&r, "cuInit");
    ck_assert_msg(!strstr(r.out, "the probe did not run under it"), "%s", r.out);
    const char *in = strstr(r.out, "output is in ");
    ck_assert_msg(in != NULL, "%s", r.out);
    char log[4200];
    snprintf(log, sizeof log, "%.*s", (int)strcspn(in + 13, ";\n"), in + 13);
    ck_assert_msg(access(log, F_OK) == 0, "%s is gone:\n%s", log, r.out);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", log);
    *strrchr(dir, '/') = '\0';
    lw_remove_dir(dir);
    lw_run_free(&r);
}
END_TEST

/* A PyTorch probe that hangs (a python whose import never returns) does not
 * outlive doctor ended by SIGTERM (timeout(1), a closed terminal): issue
 * 43, the hung probe kept running. This process is the subreaper of
 * doctor's orphans, so that the probe's end is waited for, not guessed. */
START_TEST(a_hung_probe_does_not_outlive_doctor) {
    ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    char dir[256], py[300], pidf[300], out[300], script[1024];
    lw_temp_dir(dir, sizeof dir);
    snprintf(py, sizeof py, "%s/python", dir);
    snprintf(pidf, sizeof pidf, "%s/probe.pid", dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(script, sizeof script, "#!/bin/sh\necho $$ > %s.tmp && mv %s.tmp %s\nexec sleep 600\n",
             pidf, pidf, pidf);
    lw_write_text(py, script);
    ck_assert_int_eq(chmod(py, 0755), 0);
    const char *args[] = {"doctor", "--cuda-stand-ins", "--python", py, "--timeout", "600", NULL};
    pid_t doc = lw_spawn(lw_cli_exe(), args, NULL, 0, out);
    ck_assert_msg(lw_wait_for_text(pidf, "\n", 60000), "no probe: %s", lw_slurp_file(out));
    char *text = lw_slurp_file(pidf);
    pid_t probe = (pid_t)atol(text);
    free(text);
    ck_assert_int_gt(probe, 1);
    kill(doc, SIGTERM);
    int st = 0;
    ck_assert_int_eq(lw_wait_pid(doc, 30000, &st), 0);
    int ended = lw_wait_pid(probe, 30000, &st) == 0;
    if (!ended) {
        kill(probe, SIGKILL);
        waitpid(probe, &st, 0);
    }
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    ck_assert_msg(ended, "the probe %ld outlived doctor", (long)probe);
    lw_remove_dir(dir);
}
END_TEST

START_TEST(doctor_bad_usage) {
    const char *args[] = {"doctor", "--cuda-libs", "/nonexistent/dir", NULL};
    lw_run r;
    lw_cli_run(&r, args, NULL);
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_msg(strstr(r.err, "--cuda-libs /nonexistent/dir: no such folder"), "%s", r.err);
    lw_run_free(&r);
    const char *args2[] = {"doctor", "--bogus", NULL};
    lw_cli_run(&r, args2, NULL);
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_msg(strstr(r.err, "unknown option --bogus"), "%s", r.err);
    lw_run_free(&r);
    /* An option whose value is missing is named as such, not as unknown. */
    const char *args3[] = {"doctor", "--library", NULL};
    lw_cli_run(&r, args3, NULL);
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_msg(strstr(r.err, "--library needs a value"), "%s", r.err);
    lw_run_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("doctor");
    TCase *tc = tcase_create("doctor");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, doctor_on_the_stand_ins);
    tcase_add_test(tc, doctor_with_cuda_stand_ins);
    tcase_add_test(tc, doctor_without_a_driver);
    tcase_add_test(tc, doctor_bad_usage);
    tcase_add_test(tc, a_hung_probe_does_not_outlive_doctor);
    tcase_add_test(tc, doctor_with_a_hanging_driver);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
