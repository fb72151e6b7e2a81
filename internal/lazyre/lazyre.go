// Package lazyre holds regular expressions that are compiled on first use
// instead of in a package's initialisation: a package-level Regexp is a
// constant string and a zero sync.Once, which the compiler lays out
// statically, so declaring one costs the program's start nothing.
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is a regular expression compiled the first time Get is called.
// Declare it as a package-level variable, `var re = lazyre.Regexp{Expr:
// "..."}`, and use it through Get; it must not be copied after first use.
type Regexp struct {
	// Expr is the expression in regexp's syntax. An invalid Expr makes the
	// first Get panic, as regexp.MustCompile does.
	Expr string
	once sync.Once
	re   *regexp.Regexp
}

// Get returns the compiled expression, compiling it on the first call. It
// is safe for concurrent use.
func (r *Regexp) Get() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.Expr) })
	return r.re
}
