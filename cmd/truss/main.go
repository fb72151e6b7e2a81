// Command truss is a coding-agent harness: it runs a language model in a
// loop over a repository, executes every tool call locally, and records what
// happened.
//
// Usage:
//
//	truss [flags]                   the interactive session (on a terminal)
//	truss run [flags] "task"        run a task on the current directory
//	truss exec --json [flags] "task" headless: one JSON event per line
//	truss demo                      the bundled example on the simulated model
//	truss tools [flags]             print the tool declarations a request carries
//	truss tool call [flags]         execute one tool call and print its result
//	truss sessions                  list saved sessions
//	truss ledger key|verify|show|prove|export
//	truss sandbox check
//	truss env check
//	truss mcp serve|list|call
//	truss trust [DIR]               trust the project's configuration
//	truss help [COMMAND]
//	truss --version
//
// The command itself is internal/trusscli.
package main

import (
	"os"

	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/trusscli"
)

func main() {
	if sandbox.IsHelper() {
		sandbox.RunHelper() // never returns
	}
	trusscli.LimitMemory()
	os.Exit(trusscli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
