// Package images names a benchmark task's container image when its task
// file does not (no "image" field): a Template such as
// "swebench/sweb.eval.x86_64.{instance_id}:latest" expanded with the
// task's fields, as the official harnesses name the images they publish.
//
// It is a package of its own, not part of the grader, because the name
// is the task's, not the grading's: the task loader fills it in, and both
// the agent's container and the grading's are started from it (and the
// images prefetched by it) before any grading.
//
// SWE-bench's harness (swebench/harness/test_spec/test_spec.py,
// TestSpec.instance_image_key, at v4.1.0; swebench/image_builder/
// image_spec.py, ImageSpec.name, at its HEAD) names an instance's image
// "sweb.eval.{arch}.{instance_id}:{tag}" with the instance id lower-cased
// and, for the images it pulls from a registry namespace (Docker Hub's
// "swebench" by default), "{namespace}/…" with every "__" replaced by
// "_1776_", Docker Hub refusing "__" in a name: django__django-11099 is
// swebench/sweb.eval.x86_64.django_1776_django-11099:latest.
// Multi-SWE-bench's (multi_swe_bench/harness/repos/…, image_name and
// image_tag) is "{prefix}/{org}_m_{repo}" lower-cased, tagged
// "pr-{number}" (prefix mswebench).
package images

import (
	"fmt"
	"slices"
	"strings"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/container"
)

// The templates of the official images, also accepted by name by Parse.
const (
	// SWEBench is SWE-bench's images on Docker Hub (x86_64), as its
	// harness pulls them with its default namespace.
	SWEBench = "swebench/sweb.eval.x86_64.{instance_id}:latest"
	// MultiSWEBench is Multi-SWE-bench's images on Docker Hub.
	MultiSWEBench = "mswebench/{org}_m_{name}:pr-{number}"
)

// The placeholders a template may hold. The parts of the instance id
// come from SWE-bench's form of it, ORG__NAME-NUMBER (both datasets
// name their instances so), else, for {org}, {name} and {repo}, from the
// task's repo field when it is ORG/NAME.
const (
	// InstanceID is the instance id as SWE-bench's harness writes it in
	// its images' names: lower-cased, each "__" replaced by "_1776_".
	InstanceID = "instance_id"
	// InstanceIDRaw is the instance id as the task file has it.
	InstanceIDRaw = "instance_id_raw"
	// Org is the repository's owner, lower-cased.
	Org = "org"
	// Name is the repository's name without its owner, lower-cased.
	Name = "name"
	// Repo is ORG/NAME, lower-cased.
	Repo = "repo"
	// Number is the instance's pull request number (the id's last part).
	Number = "number"
)

// Placeholders are the names a template may use.
func Placeholders() []string { return []string{InstanceID, InstanceIDRaw, Org, Name, Repo, Number} }

// Template is a parsed image template: literal text and {placeholder}s.
// Its zero value expands to nothing; make one with Parse.
type Template struct {
	src   string
	parts []part
}

// part is a literal (name "") or a placeholder.
type part struct {
	lit, name string
}

// TemplateError says why a template cannot be used.
type TemplateError struct {
	Template string
	// Unknown are the placeholders the template uses that Parse does not
	// know, in the order they appear.
	Unknown []string
	Reason  string
}

func (e *TemplateError) Error() string {
	if len(e.Unknown) > 0 {
		return fmt.Sprintf("image template %q: unknown placeholder%s {%s} (known: {%s})", e.Template,
			map[bool]string{true: "s"}[len(e.Unknown) > 1], strings.Join(e.Unknown, "}, {"), strings.Join(Placeholders(), "}, {"))
	}
	return fmt.Sprintf("image template %q: %s", e.Template, e.Reason)
}

// Parse reads an image template: text with {placeholder}s (InstanceID,
// InstanceIDRaw, Org, Name, Repo, Number), or the name of an official
// one: "swebench" (SWEBench) or "multi-swe-bench" (MultiSWEBench). Braces
// only delimit placeholders (an image reference holds none). Every
// unknown placeholder is named in the *TemplateError; so is a template
// that cannot give an image reference whatever the task (upper-case
// letters in the repository part, a space).
func Parse(s string) (*Template, error) {
	switch s {
	case "swebench":
		s = SWEBench
	case "multi-swe-bench":
		s = MultiSWEBench
	}
	if s == "" {
		return nil, &TemplateError{Template: s, Reason: "it is empty"}
	}
	t := &Template{src: s}
	var unknown []string
	rest := s
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			t.parts = append(t.parts, part{lit: rest})
			break
		}
		if rest[open] == '}' {
			return nil, &TemplateError{Template: s, Reason: "a '}' closes no placeholder"}
		}
		if open > 0 {
			t.parts = append(t.parts, part{lit: rest[:open]})
		}
		end := strings.IndexAny(rest[open+1:], "{}")
		if end < 0 || rest[open+1+end] == '{' {
			return nil, &TemplateError{Template: s, Reason: "a '{' is not closed"}
		}
		name := rest[open+1 : open+1+end]
		if !slices.Contains(Placeholders(), name) && !slices.Contains(unknown, name) {
			unknown = append(unknown, name)
		}
		t.parts = append(t.parts, part{name: name})
		rest = rest[open+1+end+1:]
	}
	if len(unknown) > 0 {
		return nil, &TemplateError{Template: s, Unknown: unknown}
	}
	// A template whose text cannot be a reference is refused now, not at
	// each task: expanded with a plain instance's fields, it must give
	// one.
	sample := map[string]string{InstanceID: "o_1776_r-1", InstanceIDRaw: "o__r-1", Org: "o", Name: "r", Repo: "o/r", Number: "1"}
	if err := container.ValidateReference(t.expand(sample)); err != nil {
		return nil, &TemplateError{Template: s, Reason: "it does not give an image reference: " + err.Error()}
	}
	return t, nil
}

// String is the template as Parse read it (an official one's name
// replaced by its text).
func (t *Template) String() string { return t.src }

// Uses reports whether the template holds the placeholder name.
func (t *Template) Uses(name string) bool {
	return slices.ContainsFunc(t.parts, func(p part) bool { return p.name == name })
}

func (t *Template) expand(vals map[string]string) string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.name == "" {
			b.WriteString(p.lit)
		} else {
			b.WriteString(vals[p.name])
		}
	}
	return b.String()
}

// Expand is the image of task: the template with its placeholders
// replaced by the task's fields. The error names the instance when a
// placeholder has no value for it (an id not of the form
// ORG__NAME-NUMBER) or the result is not an image reference.
func (t *Template) Expand(task *bench.Task) (string, error) {
	vals, missing := fields(task)
	for _, p := range t.parts {
		if why, ok := missing[p.name]; ok {
			return "", fmt.Errorf("instance %s: image template %q: {%s}: %s", task.InstanceID, t.src, p.name, why)
		}
	}
	ref := t.expand(vals)
	if err := container.ValidateReference(ref); err != nil {
		return "", fmt.Errorf("instance %s: image template %q: %w", task.InstanceID, t.src, err)
	}
	return ref, nil
}

// SWEBenchKey is an instance id as SWE-bench's harness writes it in the
// name of an image it pulls from a registry: lower-cased, each "__"
// (left to right, as Python's str.replace) replaced by "_1776_".
func SWEBenchKey(instanceID string) string {
	return strings.ReplaceAll(strings.ToLower(instanceID), "__", "_1776_")
}

// splitID splits an instance id of SWE-bench's form, ORG__NAME-NUMBER,
// at the first "__" and the last '-'.
func splitID(id string) (org, name, number string, ok bool) {
	org, rest, ok := strings.Cut(id, "__")
	i := strings.LastIndexByte(rest, '-')
	if !ok || org == "" || strings.Contains(org, "/") || i <= 0 {
		return "", "", "", false
	}
	name, number = rest[:i], rest[i+1:]
	if number == "" || strings.Trim(number, "0123456789") != "" {
		return "", "", "", false
	}
	return org, name, number, true
}

// splitRepo splits a repo field of the form ORG/NAME (not a path).
func splitRepo(repo string) (org, name string, ok bool) {
	org, name, ok = strings.Cut(repo, "/")
	valid := func(s string) bool {
		return s != "" && s[0] != '.' && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == ""
	}
	return org, name, ok && valid(org) && valid(name)
}

// fields are a task's placeholders' values, and why each missing one is.
func fields(task *bench.Task) (vals, missing map[string]string) {
	vals = map[string]string{InstanceID: SWEBenchKey(task.InstanceID), InstanceIDRaw: task.InstanceID}
	missing = map[string]string{}
	org, name, number, ok := splitID(task.InstanceID)
	if ok {
		vals[Number] = number
	} else {
		missing[Number] = "the instance id is not of the form ORG__NAME-NUMBER"
		if org, name, ok = splitRepo(task.Repo); !ok {
			why := "neither the instance id (ORG__NAME-NUMBER) nor the repo field (ORG/NAME) names the repository"
			missing[Org], missing[Name], missing[Repo] = why, why, why
			return vals, missing
		}
	}
	vals[Org], vals[Name] = strings.ToLower(org), strings.ToLower(name)
	vals[Repo] = vals[Org] + "/" + vals[Name]
	return vals, missing
}

// Fill sets the image of each task that has none to the template's
// expansion; a task with an image keeps it. The error lists the
// instances (up to five) the template cannot name an image for.
func Fill(tasks []bench.Task, t *Template) error {
	var errs []string
	n := 0
	for i := range tasks {
		if tasks[i].Image != "" {
			continue
		}
		ref, err := t.Expand(&tasks[i])
		if err != nil {
			if n++; n <= 5 {
				errs = append(errs, err.Error())
			}
			continue
		}
		tasks[i].Image = ref
	}
	switch {
	case n == 0:
		return nil
	case n > 5:
		errs = append(errs, fmt.Sprintf("and %d more", n-5))
	}
	return fmt.Errorf("%d of %d tasks have no image from the template: %s", n, len(tasks), strings.Join(errs, "; "))
}

// Of is the distinct images of tasks, in the tasks' order: what a
// benchmark prefetches (container.Engine.Prefetch).
func Of(tasks []bench.Task) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range tasks {
		if t.Image != "" && !seen[t.Image] {
			seen[t.Image] = true
			out = append(out, t.Image)
		}
	}
	return out
}
