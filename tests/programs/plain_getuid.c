/* SPDX-License-Identifier: Apache-2.0 */
/* Calls getuid, which a test interposes with a second preloaded library. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
    printf("uid %ld\n", (long)getuid());
    return 0;
}
