package sandbox

// ChooseHelperFor is chooseHelper, for the tests.
func ChooseHelperFor(self string, writable []string) string { return chooseHelper(self, writable) }

// HelperRoots is Policy.helperRoots, for the tests.
func HelperRoots(p Policy) []string { return p.helperRoots() }

// SocketDirs is socketDirs, for the tests.
func SocketDirs(sshAuthSock, home string, keep []string) ([]string, string) {
	return socketDirs(sshAuthSock, home, keep)
}

// CgroupDirs are the sandbox's own cgroups, for the tests.
func (s *Sandbox) CgroupDirs() []string {
	var dirs []string
	for _, g := range s.groups {
		dirs = append(dirs, g.dir)
	}
	return dirs
}
