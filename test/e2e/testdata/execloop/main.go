// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Command execloop is a hostile workload of the attack suite
// (test/e2e/attack_test.go): it execs itself -execs times, each time with
// -args short arguments that no other exec of any process repeats (so
// nothing can be interned), then writes one byte to fd 3 (a pipe the test
// reads) and pauses until it is killed. With -once it instead exits after
// writing the byte: the benign control, whose processes (started with
// LEFT 1) exec once with as many arguments and exit. Test code
// only.
package main

import (
	"os"
	"strconv"
	"syscall"
)

const digits = "0123456789abcdefghijklmnopqrstuvwxyz"

// arg is a short argument unique to (proc, exec, i): six base-36 digits.
func arg(proc, exec, i int) string {
	b := make([]byte, 6)
	for j, v := range []int{proc, exec, i} {
		b[2*j] = digits[(v/36)%36]
		b[2*j+1] = digits[v%36]
	}
	return string(b)
}

// usage: execloop PROC LEFT NARGS MODE [args...]; MODE is loop or once.
func main() {
	if len(os.Args) < 5 {
		os.Stderr.WriteString("usage: execloop PROC LEFT NARGS loop|once\n")
		os.Exit(2)
	}
	proc, _ := strconv.Atoi(os.Args[1])
	left, _ := strconv.Atoi(os.Args[2])
	nargs, _ := strconv.Atoi(os.Args[3])
	mode := os.Args[4]
	if left > 0 {
		self, err := os.Executable()
		if err != nil {
			os.Exit(3)
		}
		argv := []string{os.Args[0], os.Args[1], strconv.Itoa(left - 1), os.Args[3], mode}
		for i := range nargs {
			argv = append(argv, arg(proc, left, i))
		}
		err = syscall.Exec(self, argv, os.Environ())
		os.Stderr.WriteString("execloop: exec: " + err.Error() + "\n")
		os.Exit(4)
	}
	_, _ = syscall.Write(3, []byte{1})
	if mode == "once" {
		return
	}
	for {
		syscall.Pause()
	}
}
