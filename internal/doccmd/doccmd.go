// Package doccmd extracts the command lines printed in the repository's
// Markdown (README.md, docs/*.md) so that a test can run every one of them
// as printed. A command is a line of a fenced shell block (```sh, ```bash,
// ```console, ```shell or unlabelled) or of an indented block that starts
// with one of Programs; continuation lines ending in a backslash are joined
// and a trailing " # comment" is dropped.
//
// A file may carry directives, HTML comments that apply to every command
// of that file beginning with PREFIX:
//
//	<!-- doccmd: skip PREFIX -- REASON -->    not run (REASON is required)
//	<!-- doccmd: server PREFIX -- REASON -->  a long-running command: it must come to serve (reach the broker it
//	                                           names, answer on the address it serves), or, naming none, still run
//	                                           after a few seconds; then it is stopped
//	<!-- doccmd: full PREFIX -- REASON -->    run only in the full tier (not under go test -short)
//
// The longest matching prefix wins. A fenced block of another language whose
// first line is a comment naming a file ("# config.yaml — ...") is that
// file's content: the test writes it before running the document's commands.
package doccmd

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Programs are the command words a documented line may start with.
var Programs = []string{"dpsurv", "go", "make", "head", "scripts/", "helm", "Rscript", "node", "npm", "kcat", "curl", "promtool", "bash", "umask", "for", "cd"}

// Mode says how a command is run.
type Mode string

// The modes of a directive.
const (
	Run    Mode = "run"
	Skip   Mode = "skip"
	Server Mode = "server"
	Full   Mode = "full"
)

// Command is one documented command line.
type Command struct {
	File   string
	Line   int
	Text   string
	Mode   Mode
	Reason string
}

// File is a named file shown in a document.
type File struct {
	Name, Content string
}

// Directive is one doccmd comment.
type Directive struct {
	Mode   Mode
	Prefix string
	Reason string
}

var (
	fenceRe     = regexp.MustCompile("^\\s*```\\s*([A-Za-z]*)")
	fileRe      = regexp.MustCompile(`^#\s+([A-Za-z0-9_.-]+\.(?:ya?ml|json|csv))(?:\s|$)`)
	directiveRe = regexp.MustCompile(`^<!--\s*doccmd:\s*(skip|server|full)\s+(.*?)\s+--\s+(.+?)\s*-->\s*$`)
)

// Parse reads one Markdown file.
func Parse(path string) ([]Command, []Directive, error) {
	cmds, dirs, _, err := ParseAll(path)
	return cmds, dirs, err
}

// ParseAll reads one Markdown file: its commands, directives and named
// files.
func ParseAll(path string) ([]Command, []Directive, []File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("doccmd: %w", err)
	}
	defer f.Close()
	var (
		cmds    []Command
		dirs    []Directive
		inFence bool
		shell   bool
		pending string
		start   int
		files   []File
		file    *File
		first   bool
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if m := fenceRe.FindStringSubmatch(line); m != nil {
			if !inFence {
				inFence, first = true, true
				switch m[1] {
				case "", "sh", "bash", "console", "shell":
					shell = true
				default:
					shell = false
				}
			} else {
				inFence = false
				if file != nil {
					files = append(files, *file)
					file = nil
				}
			}
			continue
		}
		if inFence && !shell {
			if first {
				if m := fileRe.FindStringSubmatch(line); m != nil {
					file = &File{Name: m[1]}
				}
			}
			if file != nil {
				file.Content += line + "\n"
			}
			first = false
			continue
		}
		if !inFence {
			if d := directiveRe.FindStringSubmatch(strings.TrimSpace(line)); d != nil {
				dirs = append(dirs, Directive{Mode: Mode(d[1]), Prefix: d[2], Reason: d[3]})
				continue
			} else if t := strings.TrimSpace(line); strings.HasPrefix(t, "<!--") && strings.Contains(t, "doccmd:") {
				return nil, nil, nil, fmt.Errorf("doccmd: %s:%d: malformed directive (want <!-- doccmd: skip|server|full PREFIX -- REASON -->)", path, n)
			}
		}
		var text string
		switch {
		case inFence && shell:
			text = line
		case !inFence && strings.HasPrefix(line, "    "):
			text = line
		case pending != "":
			text = line
		default:
			continue
		}
		text = strings.TrimSpace(text)
		text = strings.TrimPrefix(text, "$ ")
		if pending == "" {
			if !isCommand(text) {
				continue
			}
			start = n
		}
		if strings.HasSuffix(text, "\\") {
			pending += strings.TrimSuffix(text, "\\") + " "
			continue
		}
		full := stripComment(pending + text)
		pending = ""
		cmds = append(cmds, Command{File: path, Line: start, Text: strings.Join(strings.Fields(full), " "), Mode: Run})
	}
	if err := sc.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("doccmd: %s: %w", path, err)
	}
	for i := range cmds {
		best := -1
		for _, d := range dirs {
			if strings.HasPrefix(cmds[i].Text, d.Prefix) && len(d.Prefix) > best {
				best = len(d.Prefix)
				cmds[i].Mode, cmds[i].Reason = d.Mode, d.Reason
			}
		}
	}
	return cmds, dirs, files, nil
}

func isCommand(s string) bool {
	s = strings.TrimPrefix(s, "(") // a subshell: (umask 077; head ...)
	for _, p := range Programs {
		if s == p || strings.HasPrefix(s, p+" ") || (strings.HasSuffix(p, "/") && strings.HasPrefix(s, p)) {
			return true
		}
	}
	return false
}

// stripComment drops a trailing shell comment (" # ...") outside quotes.
func stripComment(s string) string {
	inS, inD := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' && !inD:
			inS = !inS
		case c == '"' && !inS:
			inD = !inD
		case c == '#' && !inS && !inD && i > 0 && (s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimSpace(s[:i])
		}
	}
	return strings.TrimSpace(s)
}
