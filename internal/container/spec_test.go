package container

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in, image, err string
	}{
		{"", "", ""},
		{"host", "", ""},
		{"image:python:3.9", "python:3.9", ""},
		{"image:docker.io/swebench/sweb.eval.x86_64.django_1776_django-11099:latest", "docker.io/swebench/sweb.eval.x86_64.django_1776_django-11099:latest", ""},
		{"image:localhost:5000/a/b@sha256:" + strings.Repeat("ab", 32), "localhost:5000/a/b@sha256:" + strings.Repeat("ab", 32), ""},
		{"image:[::1]:5000/x:tag", "[::1]:5000/x:tag", ""},
		{"image:sha256:" + strings.Repeat("0f", 32), "sha256:" + strings.Repeat("0f", 32), ""},
		{"image:0adb7de88eb9", "0adb7de88eb9", ""},
		{"image:", "", "it is empty"},
		{"image:--privileged", "", "starts with '-'"},
		{"image:a b", "", "space"},
		{"image:Ubuntu", "", "lower case"},
		{"image:x:tag:more", "", "not [registry/]path"},
		{"image:a//b", "", "not [registry/]path"},
		{"image:a:" + strings.Repeat("t", 129), "", "not [registry/]path"},
		{"image:" + strings.Repeat("a/", 130) + "a", "", "more than 255"},
		{"docker:python", "", "unknown environment"},
		{"Host", "", "unknown environment"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			s, err := ParseSpec(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || s.Image != tc.image {
				t.Fatalf("got %+v %v, want image %q", s, err, tc.image)
			}
			if s.Host() != (tc.image == "") {
				t.Error("Host()")
			}
			if back, err := ParseSpec(s.String()); err != nil || back != s {
				t.Errorf("round trip: %+v %v", back, err)
			}
		})
	}
	var re *ReferenceError
	if _, err := ParseSpec("image:-x"); !errors.As(err, &re) {
		t.Errorf("not a ReferenceError: %v", err)
	}
}

// FuzzParseSpec: no input panics; an accepted image reference is one an
// engine's command line reads as an argument, and it round-trips.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"host", "image:python:3.9", "image:a/b@sha256:" + strings.Repeat("0", 64), "image:-x", "image:[::1]/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSpec(in)
		if err != nil {
			return
		}
		if !s.Host() && (strings.HasPrefix(s.Image, "-") || strings.ContainsAny(s.Image, " \t\n\x00")) {
			t.Fatalf("accepted %q", s.Image)
		}
		if back, err := ParseSpec(s.String()); err != nil || back != s {
			t.Fatalf("round trip of %q: %+v %v", in, back, err)
		}
	})
}
