package container

import (
	"fmt"
	"strings"

	"github.com/trussdev/truss/internal/lazyre"
)

// Spec is a session's environment as the user names it: the host (the
// sandbox, the default) or an image.
type Spec struct {
	// Image is the image reference; "" means the host.
	Image string
}

// Host reports whether the spec is the host.
func (s Spec) Host() bool { return s.Image == "" }

// String is the spec as ParseSpec reads it.
func (s Spec) String() string {
	if s.Host() {
		return "host"
	}
	return "image:" + s.Image
}

// ParseSpec reads an --env value: "host" (or "") or "image:REF", REF an
// image reference (ValidateReference).
func ParseSpec(s string) (Spec, error) {
	switch {
	case s == "" || s == "host":
		return Spec{}, nil
	case strings.HasPrefix(s, "image:"):
		ref := strings.TrimPrefix(s, "image:")
		if err := ValidateReference(ref); err != nil {
			return Spec{}, err
		}
		return Spec{Image: ref}, nil
	}
	return Spec{}, fmt.Errorf("unknown environment %q: use host or image:REF (an OCI image reference such as image:docker.io/library/python:3.9)", s)
}

// The reference grammar of the OCI distribution's reference package:
// [domain/]path[:tag][@digest], path components of lower-case letters
// and digits joined by '.', '_', '__' or dashes.
const (
	refComponent = `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
	refDomain    = `(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?`
	refTag       = `[\w][\w.-]{0,127}`
	refDigest    = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
)

// Compiled on first use, not at every start of truss (most sessions name
// no image).
var (
	referenceRE = lazyre.Regexp{Expr: `^(?:(` + refDomain + `)/)?(` + refComponent + `(?:/` + refComponent + `)*)(?::(` + refTag + `))?(?:@(` + refDigest + `))?$`}
	imageIDRE   = lazyre.Regexp{Expr: `^(?:sha256:[0-9a-f]{64}|[0-9a-f]{12,64})$`}
)

// maxNameLength bounds a reference's name (domain and path), as the
// distribution's reference package does.
const maxNameLength = 255

// ReferenceError says why a string is not an image reference.
type ReferenceError struct {
	Ref    string
	Reason string
}

func (e *ReferenceError) Error() string {
	return fmt.Sprintf("invalid image reference %q: %s", e.Ref, e.Reason)
}

// ValidateReference checks ref against the OCI reference grammar
// ([domain/]path[:tag][@digest]), or as an image ID (sha256:HEX, or 12 to
// 64 hex digits). It refuses what an engine's command line would read as
// something else: an empty reference, a leading '-', spaces and control
// characters.
func ValidateReference(ref string) error {
	switch {
	case ref == "":
		return &ReferenceError{ref, "it is empty"}
	case strings.HasPrefix(ref, "-"):
		return &ReferenceError{ref, "it starts with '-'"}
	case strings.ContainsFunc(ref, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return &ReferenceError{ref, "it contains a space or a control character"}
	}
	if imageIDRE.Get().MatchString(ref) {
		return nil
	}
	m := referenceRE.Get().FindStringSubmatch(ref)
	if m == nil {
		if strings.ToLower(ref) != ref && !strings.ContainsAny(ref, "/:@") {
			return &ReferenceError{ref, "repository names are lower case"}
		}
		return &ReferenceError{ref, "not [registry/]path[:tag][@digest] with a lower-case path"}
	}
	if n := len(m[1]) + len(m[2]); n > maxNameLength {
		return &ReferenceError{ref, fmt.Sprintf("the name is %d characters, more than %d", n, maxNameLength)}
	}
	return nil
}
