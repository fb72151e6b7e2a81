package images_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/images"
	"github.com/trussdev/truss/internal/bench/multiswe"
	"github.com/trussdev/truss/internal/container"
)

// The official names of real instances' images. SWE-bench's rule
// (test_spec.py instance_image_key at v4.1.0, image_spec.py ImageSpec.name
// at HEAD 7a21e05): "{namespace}/sweb.eval.{arch}.{id lower-cased}:{tag}"
// with "__" replaced by "_1776_"; its own test
// (tests/test_task_publish.py) names google__gson-2479's image
// swebench/sweb.eval.x86_64.google_1776_gson-2479:latest.
func TestSWEBenchTemplate(t *testing.T) {
	tmpl, err := images.Parse("swebench")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ id, repo, want string }{
		{"google__gson-2479", "google/gson", "swebench/sweb.eval.x86_64.google_1776_gson-2479:latest"},
		{"django__django-11099", "django/django", "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"},
		{"astropy__astropy-12907", "astropy/astropy", "swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest"},
		{"scikit-learn__scikit-learn-10297", "scikit-learn/scikit-learn", "swebench/sweb.eval.x86_64.scikit-learn_1776_scikit-learn-10297:latest"},
		{"pytest-dev__pytest-5103", "pytest-dev/pytest", "swebench/sweb.eval.x86_64.pytest-dev_1776_pytest-5103:latest"},
		{"sphinx-doc__sphinx-10325", "sphinx-doc/sphinx", "swebench/sweb.eval.x86_64.sphinx-doc_1776_sphinx-10325:latest"},
		{"psf__requests-2317", "psf/requests", "swebench/sweb.eval.x86_64.psf_1776_requests-2317:latest"},
		// Upper-case ids are lower-cased (SWE-bench Multimodal's
		// Automattic__wp-calypso instances).
		{"Automattic__wp-calypso-21648", "Automattic/wp-calypso", "swebench/sweb.eval.x86_64.automattic_1776_wp-calypso-21648:latest"},
	} {
		got, err := tmpl.Expand(&bench.Task{InstanceID: tc.id, Repo: tc.repo})
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.id, got, err, tc.want)
		}
		if err := container.ValidateReference(got); err != nil {
			t.Errorf("%s: %v", tc.id, err)
		}
	}
}

// Multi-SWE-bench's names (harness/repos/…: "{prefix}/{org}_m_{repo}"
// lower-cased, tag "pr-{number}"): the template gives what the importer
// (multiswe.Image) does.
func TestMultiSWEBenchTemplate(t *testing.T) {
	tmpl, err := images.Parse("multi-swe-bench")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		org, repo string
		number    int64
		want      string
	}{
		{"ponylang", "ponyc", 4595, "mswebench/ponylang_m_ponyc:pr-4595"},
		{"catchorg", "Catch2", 2849, "mswebench/catchorg_m_catch2:pr-2849"},
		{"OpenMathLib", "OpenBLAS", 4729, "mswebench/openmathlib_m_openblas:pr-4729"},
		{"fmtlib", "fmt", 3248, "mswebench/fmtlib_m_fmt:pr-3248"},
	} {
		id := (&multiswe.Record{Org: tc.org, Repo: tc.repo, Number: tc.number}).ID()
		got, err := tmpl.Expand(&bench.Task{InstanceID: id, Repo: tc.org + "/" + tc.repo})
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", id, got, err, tc.want)
		}
		if imp := multiswe.Image(tc.org, tc.repo, tc.number, ""); imp != got {
			t.Errorf("%s: the template gives %q, the importer %q", id, got, imp)
		}
	}
}

func TestExpand(t *testing.T) {
	task := func(id, repo string) *bench.Task { return &bench.Task{InstanceID: id, Repo: repo} }
	for _, tc := range []struct {
		name, tmpl string
		task       *bench.Task
		want       string // "" when an error containing errText is wanted
		errText    string
	}{
		{"every placeholder", "ghcr.io/me/{org}.{name}.{number}:{instance_id}", task("Org__Repo.X-12", "Org/Repo.X"), "ghcr.io/me/org.repo.x.12:org_1776_repo.x-12", ""},
		{"repo as a path", "reg.example:5000/{repo}:{number}", task("pallets__flask-4992", "pallets/flask"), "reg.example:5000/pallets/flask:4992", ""},
		{"raw id", "localhost/{instance_id_raw}:v1", task("pallets__flask-4992", "/abs/path"), "localhost/pallets__flask-4992:v1", ""},
		{"raw id with capitals is no reference", "localhost/{instance_id_raw}:v1", task("Automattic__wp-calypso-1", ""), "", "with a lower-case path"},
		{"no placeholder", "busybox:1.36", task("anything", ""), "busybox:1.36", ""},
		{"three underscores as Python replaces them", "x/{instance_id}", task("a___b-1", ""), "x/a_1776__b-1", ""},
		{"org from the repo field", "x/{org}_m_{name}", task("custom-1", "Acme/Rocket"), "x/acme_m_rocket", ""},
		{"number needs the id's form", "x/{org}:pr-{number}", task("custom-1", "acme/rocket"), "", "instance custom-1: image template \"x/{org}:pr-{number}\": {number}: the instance id is not of the form ORG__NAME-NUMBER"},
		{"org needs the id or the repo", "x/{org}", task("custom-1", "../repos/rocket"), "", "{org}: neither the instance id"},
		{"repo field that is a relative path", "x/{name}", task("custom", "./rocket/x"), "", "{name}: neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := images.Parse(tc.tmpl)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Expand(tc.task)
			if tc.want != "" {
				if err != nil || got != tc.want {
					t.Errorf("got %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errText) || !strings.Contains(err.Error(), tc.task.InstanceID) {
				t.Errorf("got %q, %v; want an error with %q", got, err, tc.errText)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		tmpl    string
		unknown []string
		reason  string
	}{
		{"x/{id}:{tag}", []string{"id", "tag"}, ""},
		{"x/{instance_id}:{tag}-{tag}", []string{"tag"}, ""},
		{"x/{}", []string{""}, ""},
		{"x/{INSTANCE_ID}", []string{"INSTANCE_ID"}, ""},
		{"", nil, "it is empty"},
		{"x/{instance_id", nil, "a '{' is not closed"},
		{"x/{in{stance_id}", nil, "a '{' is not closed"},
		{"x/instance_id}", nil, "a '}' closes no placeholder"},
		{"swebench/Sweb.eval.{instance_id}", nil, "it does not give an image reference"},
		{"x/{instance_id} y", nil, "it does not give an image reference"},
		{"x:{repo}", nil, "it does not give an image reference"},
		{"-x/{instance_id}", nil, "it does not give an image reference"},
	} {
		_, err := images.Parse(tc.tmpl)
		te, ok := errors.AsType[*images.TemplateError](err)
		if !ok {
			t.Errorf("Parse(%q) = %v, want a *TemplateError", tc.tmpl, err)
			continue
		}
		if !slices.Equal(te.Unknown, tc.unknown) || !strings.Contains(te.Reason, tc.reason) {
			t.Errorf("Parse(%q): unknown %q reason %q; want %q %q", tc.tmpl, te.Unknown, te.Reason, tc.unknown, tc.reason)
		}
		for _, u := range tc.unknown {
			if !strings.Contains(err.Error(), "{"+u+"}") {
				t.Errorf("Parse(%q): %v does not name {%s}", tc.tmpl, err, u)
			}
		}
	}
	_, err := images.Parse("x/{id}:{tag}")
	if want := `image template "x/{id}:{tag}": unknown placeholders {id}, {tag} (known: {instance_id}, {instance_id_raw}, {org}, {name}, {repo}, {number})`; err.Error() != want {
		t.Errorf("message\n%s\nwant\n%s", err, want)
	}
}

func TestParseNames(t *testing.T) {
	for name, want := range map[string]string{"swebench": images.SWEBench, "multi-swe-bench": images.MultiSWEBench, "a/{org}": "a/{org}"} {
		tmpl, err := images.Parse(name)
		if err != nil || tmpl.String() != want {
			t.Errorf("Parse(%q) = %v, %v; want %q", name, tmpl, err, want)
		}
	}
	tmpl, _ := images.Parse(images.SWEBench)
	if !tmpl.Uses(images.InstanceID) || tmpl.Uses(images.Number) {
		t.Error("Uses")
	}
}

func TestFillAndOf(t *testing.T) {
	tasks := []bench.Task{
		{InstanceID: "django__django-11099"},
		{InstanceID: "own", Image: "localhost/own:1"},
		{InstanceID: "django__django-11099-again", Image: "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"},
		{InstanceID: "psf__requests-2317"},
	}
	tmpl, _ := images.Parse("swebench")
	if err := images.Fill(tasks, tmpl); err != nil {
		t.Fatal(err)
	}
	want := []string{"swebench/sweb.eval.x86_64.django_1776_django-11099:latest", "localhost/own:1", "swebench/sweb.eval.x86_64.psf_1776_requests-2317:latest"}
	if got := images.Of(tasks); !slices.Equal(got, want) {
		t.Errorf("Of = %q, want %q", got, want)
	}
	var bad []bench.Task
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "ok__ok-1"} {
		bad = append(bad, bench.Task{InstanceID: id})
	}
	num, _ := images.Parse("x/{org}:{number}")
	err := images.Fill(bad, num)
	if err == nil || !strings.HasPrefix(err.Error(), "7 of 8 tasks have no image from the template: instance a: ") || !strings.HasSuffix(err.Error(), "; and 2 more") {
		t.Errorf("%v", err)
	}
	if bad[7].Image != "x/ok:1" {
		t.Errorf("the task the template names: %q", bad[7].Image)
	}
}

// FuzzTemplate: Parse never panics; a template it accepts reads back
// the same, and expands to an image reference or an error naming the
// instance.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{images.SWEBench, images.MultiSWEBench, "x/{instance_id_raw}:{number}", "{", "}", "{}", "a{b}c", "x/{repo}", "swebench", "{org}{name}{number}"} {
		f.Add(s, "django__django-11099", "django/django")
	}
	f.Fuzz(func(t *testing.T, s, id, repo string) {
		tmpl, err := images.Parse(s)
		if err != nil {
			if _, ok := errors.AsType[*images.TemplateError](err); !ok {
				t.Fatalf("Parse(%q): %T %v", s, err, err)
			}
			return
		}
		again, err := images.Parse(tmpl.String())
		if err != nil || again.String() != tmpl.String() {
			t.Fatalf("Parse(%q) read back as %v, %v", s, again, err)
		}
		task := &bench.Task{InstanceID: id, Repo: repo}
		ref, err := tmpl.Expand(task)
		if err != nil {
			if !strings.Contains(err.Error(), "instance "+id+":") {
				t.Fatalf("Expand: %v does not name the instance", err)
			}
			return
		}
		if err := container.ValidateReference(ref); err != nil {
			t.Fatalf("Expand(%q) with %q = %q: %v", s, id, ref, err)
		}
		if strings.ContainsAny(ref, "{}") {
			t.Fatalf("Expand left a brace: %q", ref)
		}
	})
}
