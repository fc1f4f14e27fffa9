# SPDX-License-Identifier: Apache-2.0
# The AArch64 tier (make check-aarch64).

# AArch64: cross-built (gcc-aarch64-linux-gnu, an arm64 sysroot unpacked into
# the cache folder) and run under qemu-user; see scripts/check-aarch64.sh.
check-aarch64:
	@scripts/check-aarch64.sh
