package hookrelay_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The docs stand alone: every relative link of README.md, CHANGELOG.md and
// docs/ leads to a file (and a heading) of the repository, and nothing cites
// a document users do not have. These tests keep them so as the code moves.

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*$`)
	slugDrop   = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	codeFence  = regexp.MustCompile("(?s)```.*?```")
	testName   = regexp.MustCompile("`((?:Test|Fuzz)[A-Z][A-Za-z0-9_]*)`")
	testFunc   = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]*)\(`)
	envName    = regexp.MustCompile(`"(HOOKRELAY_[A-Z0-9_]+)"`)
	skippedDir = map[string]bool{".git": true, "data": true, "build": true, "node_modules": true}
)

// repoFiles returns the repository's files (every module) whose names end
// in one of exts, skipping hidden and generated-state directories.
func repoFiles(t *testing.T, exts ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || skippedDir[d.Name()]) {
				return filepath.SkipDir
			}
			return nil
		}
		for _, ext := range exts {
			if strings.HasSuffix(path, ext) {
				out = append(out, path)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// docPages returns README.md, CHANGELOG.md and every page under docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md", "CHANGELOG.md"}
	for _, p := range repoFiles(t, ".md") {
		if strings.HasPrefix(p, "docs"+string(filepath.Separator)) {
			pages = append(pages, p)
		}
	}
	return pages
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// anchors returns the heading anchors of a markdown page as GitHub makes
// them: lower case, punctuation dropped, spaces as hyphens, repeats numbered.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(codeFence.ReplaceAllString(text, ""), "\n") {
		m := mdHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n, ok := seen[slug]; ok {
			seen[slug] = n + 1
			slug += "-" + strconv.Itoa(n+1)
		} else {
			seen[slug] = 0
		}
		out[slug] = true
	}
	return out
}

func TestDocsRelativeLinksResolve(t *testing.T) {
	t.Parallel()
	for _, page := range docPages(t) {
		text := codeFence.ReplaceAllString(readFile(t, page), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(link, "#")
			target := page
			if file != "" {
				target = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %s: no file %s", page, link, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(target, ".md") && !anchors(readFile(t, target))[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", page, link, target, anchor)
			}
		}
	}
}

// TestNoCitationOfAnAbsentSpec: the docs and comments cite the repository's
// own documents (docs/guarantees.md, docs/api.md, docs/benchmarks.md), not a
// specification users do not have.
func TestNoCitationOfAnAbsentSpec(t *testing.T) {
	t.Parallel()
	// Spelt in pieces so that a search of the repository for the citation
	// does not find this test.
	spec := "SP" + "EC"
	needle := spec + " §"
	for _, path := range repoFiles(t, ".go", ".md", ".sh", ".sql", ".yaml") {
		if text := readFile(t, path); strings.Contains(text, needle) || strings.Contains(text, spec+".md") {
			t.Errorf("%s cites a specification users do not have; cite docs/guarantees.md, docs/api.md or docs/benchmarks.md instead", path)
		}
	}
}

// TestGuaranteesNameRealTests: every test docs/guarantees.md names as the one
// that catches a broken promise exists in some module.
func TestGuaranteesNameRealTests(t *testing.T) {
	t.Parallel()
	defined := map[string]bool{}
	for _, path := range repoFiles(t, "_test.go") {
		for _, m := range testFunc.FindAllStringSubmatch(readFile(t, path), -1) {
			defined[m[1]] = true
		}
	}
	for _, m := range testName.FindAllStringSubmatch(readFile(t, filepath.Join("docs", "guarantees.md")), -1) {
		if !defined[m[1]] {
			t.Errorf("docs/guarantees.md names %s, which no _test.go file defines", m[1])
		}
	}
}

// TestConfigurationPageListsEveryVariable: every HOOKRELAY_ variable the
// binary reads is documented in docs/operations/configuration.md.
func TestConfigurationPageListsEveryVariable(t *testing.T) {
	t.Parallel()
	page := readFile(t, filepath.Join("docs", "operations", "configuration.md"))
	files, err := filepath.Glob(filepath.Join("cmd", "hookrelay", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		for _, m := range envName.FindAllStringSubmatch(readFile(t, path), -1) {
			if !strings.Contains(page, "`"+m[1]+"`") {
				t.Errorf("%s reads %s, which docs/operations/configuration.md does not list", path, m[1])
			}
		}
	}
}
