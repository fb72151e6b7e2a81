package runner

// HiddenPaths is hidden, for the tests.
func (r *Runner) HiddenPaths() []string { return r.hidden() }
