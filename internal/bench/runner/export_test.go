package runner

// HiddenPaths is hidden, for the tests.
func (r *Runner) HiddenPaths() []string { return r.hidden() }

// SetInlineLedger sets the largest ledger archive e sends inside a result
// (the rest are uploaded), for the tests.
func SetInlineLedger(e *Exec, n int) { e.inline = n }
