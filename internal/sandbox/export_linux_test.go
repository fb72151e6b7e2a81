package sandbox

// ChooseHelperFor is chooseHelper, for the tests.
func ChooseHelperFor(self string, writable []string) string { return chooseHelper(self, writable) }
