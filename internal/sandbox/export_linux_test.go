package sandbox

// ChooseHelperFor is chooseHelper, for the tests.
func ChooseHelperFor(self string, writable []string) string { return chooseHelper(self, writable) }

// HelperRoots is Policy.helperRoots, for the tests.
func HelperRoots(p Policy) []string { return p.helperRoots() }
