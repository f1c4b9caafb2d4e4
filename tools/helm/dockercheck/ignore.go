package dockercheck

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Ignore is a parsed .dockerignore: patterns relative to the context root,
// Go filepath.Match syntax plus "**" for any number of directories, "!" to
// re-include; the last matching pattern decides. A pattern that matches a
// directory excludes everything below it.
type Ignore struct {
	rules []ignoreRule
}

type ignoreRule struct {
	re      *regexp.Regexp
	exclude bool
	text    string
}

// ParseIgnore reads .dockerignore text.
func ParseIgnore(r io.Reader) (*Ignore, error) {
	ig := &Ignore{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		exclude := true
		if strings.HasPrefix(line, "!") {
			exclude = false
			line = strings.TrimSpace(line[1:])
		}
		p := path.Clean(filepath.ToSlash(strings.TrimPrefix(line, "/")))
		re, err := patternRegexp(p)
		if err != nil {
			return nil, fmt.Errorf("parse dockerignore: line %d: %w", n, err)
		}
		ig.rules = append(ig.rules, ignoreRule{re: re, exclude: exclude, text: line})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse dockerignore: %w", err)
	}
	return ig, nil
}

func patternRegexp(p string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '*' && strings.HasPrefix(p[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 2
		case c == '*' && strings.HasPrefix(p[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			j := strings.IndexByte(p[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("pattern %q: unterminated [", p)
			}
			cls := p[i+1 : i+j]
			if strings.HasPrefix(cls, "^") || strings.HasPrefix(cls, "!") {
				cls = "^" + cls[1:]
			}
			b.WriteString("[" + cls + "]")
			i += j
		case c == '\\' && i+1 < len(p):
			i++
			b.WriteString(regexp.QuoteMeta(string(p[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// Excluded reports whether rel (slash-separated, relative to the context
// root) is left out of the build context.
func (ig *Ignore) Excluded(rel string) bool {
	rel = path.Clean(filepath.ToSlash(rel))
	// The path itself or any parent directory may match.
	var cands []string
	for p := rel; p != "." && p != "/"; p = path.Dir(p) {
		cands = append(cands, p)
	}
	excluded := false
	for _, r := range ig.rules {
		for _, c := range cands {
			if r.re.MatchString(c) {
				excluded = r.exclude
				break
			}
		}
	}
	return excluded
}

// CopyContext copies the regular files of src that ig leaves in the build
// context into dst, keeping their modes. It returns the number of files
// copied.
func CopyContext(src, dst string, ig *Ignore) (int, error) {
	n := 0
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if ig.Excluded(rel) {
			// Docker still walks into an excluded directory when a later
			// "!" pattern may re-include something below it; this context
			// has none, so skip the whole tree.
			if d.IsDir() && !ig.hasExceptions() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			if err := copyFile(p, target, info.Mode().Perm()); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("copy build context: %w", err)
	}
	return n, nil
}

func (ig *Ignore) hasExceptions() bool {
	for _, r := range ig.rules {
		if !r.exclude {
			return true
		}
	}
	return false
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
