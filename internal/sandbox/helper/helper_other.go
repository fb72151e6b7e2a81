//go:build !linux

// Package helper is the sandbox's helper process; off Linux there is none.
package helper

// Arg is the first argument that makes a process the helper.
const Arg = "__sandbox-exec"

// IsHelper reports false: there is no helper off Linux.
func IsHelper() bool { return false }

// Run panics: there is no helper off Linux.
func Run() { panic("sandbox helper off Linux") }
