/* SPDX-License-Identifier: Apache-2.0 */
/* M(a, b, c, k) for k = 0 .. 63 (LW_CALLER_OBJECTS): the per-object entries of runtime.c. */
#ifndef LW_HOOKS_REP64_H
#define LW_HOOKS_REP64_H
#define LW_REP64(M, a, b, c)                                                                       \
    M(a, b, c, 0)                                                                                  \
    M(a, b, c, 1)                                                                                  \
    M(a, b, c, 2)                                                                                  \
    M(a, b, c, 3)                                                                                  \
    M(a, b, c, 4)                                                                                  \
    M(a, b, c, 5)                                                                                  \
    M(a, b, c, 6)                                                                                  \
    M(a, b, c, 7)                                                                                  \
    M(a, b, c, 8)                                                                                  \
    M(a, b, c, 9)                                                                                  \
    M(a, b, c, 10)                                                                                 \
    M(a, b, c, 11)                                                                                 \
    M(a, b, c, 12)                                                                                 \
    M(a, b, c, 13)                                                                                 \
    M(a, b, c, 14)                                                                                 \
    M(a, b, c, 15)                                                                                 \
    M(a, b, c, 16)                                                                                 \
    M(a, b, c, 17)                                                                                 \
    M(a, b, c, 18)                                                                                 \
    M(a, b, c, 19)                                                                                 \
    M(a, b, c, 20)                                                                                 \
    M(a, b, c, 21)                                                                                 \
    M(a, b, c, 22)                                                                                 \
    M(a, b, c, 23)                                                                                 \
    M(a, b, c, 24)                                                                                 \
    M(a, b, c, 25)                                                                                 \
    M(a, b, c, 26)                                                                                 \
    M(a, b, c, 27)                                                                                 \
    M(a, b, c, 28)                                                                                 \
    M(a, b, c, 29)                                                                                 \
    M(a, b, c, 30)                                                                                 \
    M(a, b, c, 31)                                                                                 \
    M(a, b, c, 32)                                                                                 \
    M(a, b, c, 33)                                                                                 \
    M(a, b, c, 34)                                                                                 \
    M(a, b, c, 35)                                                                                 \
    M(a, b, c, 36)                                                                                 \
    M(a, b, c, 37)                                                                                 \
    M(a, b, c, 38)                                                                                 \
    M(a, b, c, 39)                                                                                 \
    M(a, b, c, 40)                                                                                 \
    M(a, b, c, 41)                                                                                 \
    M(a, b, c, 42)                                                                                 \
    M(a, b, c, 43)                                                                                 \
    M(a, b, c, 44)                                                                                 \
    M(a, b, c, 45)                                                                                 \
    M(a, b, c, 46)                                                                                 \
    M(a, b, c, 47)                                                                                 \
    M(a, b, c, 48)                                                                                 \
    M(a, b, c, 49)                                                                                 \
    M(a, b, c, 50)                                                                                 \
    M(a, b, c, 51)                                                                                 \
    M(a, b, c, 52)                                                                                 \
    M(a, b, c, 53)                                                                                 \
    M(a, b, c, 54)                                                                                 \
    M(a, b, c, 55)                                                                                 \
    M(a, b, c, 56)                                                                                 \
    M(a, b, c, 57)                                                                                 \
    M(a, b, c, 58)                                                                                 \
    M(a, b, c, 59)                                                                                 \
    M(a, b, c, 60)                                                                                 \
    M(a, b, c, 61)                                                                                 \
    M(a, b, c, 62)                                                                                 \
    M(a, b, c, 63)
#endif
