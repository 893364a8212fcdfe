// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

#include "textflag.h"

// func int80(nr, di uintptr) uintptr
TEXT ·int80(SB), NOSPLIT, $0-24
	MOVQ nr+0(FP), AX
	MOVQ di+8(FP), DI
	INT  $0x80
	MOVQ AX, ret+16(FP)
	RET
