package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// TextFolder is a data set of text files stored one class per sub-folder,
// as ImageFolder stores images (and torchvision's ImageFolder, or
// scikit-learn's load_files, read them):
//
//	root/neg/001.txt
//	root/pos/001.txt
//
// Class names are the sub-folder names in sorted order; Label i means
// Classes[i]. Files are listed when the folder is opened and read on
// every Get, so the data set holds only paths in memory. Batch its items
// with a TextBatcher.
type TextFolder struct {
	Root    string
	Classes []string
	Paths   []string // the text files, by class, then by name
	Labels  []int64  // the class of each file
}

// LoadTextFolder lists the text files under root: every .txt file (any
// case) directly inside a sub-folder of root. Other files, and files
// directly in root, are ignored. It returns an error when root cannot be
// read, has no sub-folder, or a sub-folder cannot be read.
func LoadTextFolder(root string) (*TextFolder, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("data: LoadTextFolder: %w", err)
	}
	f := &TextFolder{Root: root}
	for _, e := range entries { // ReadDir sorts by name
		if e.IsDir() {
			f.Classes = append(f.Classes, e.Name())
		}
	}
	if len(f.Classes) == 0 {
		return nil, fmt.Errorf("data: LoadTextFolder: %s has no class sub-folders", root)
	}
	for c, class := range f.Classes {
		files, err := os.ReadDir(filepath.Join(root, class))
		if err != nil {
			return nil, fmt.Errorf("data: LoadTextFolder: %w", err)
		}
		for _, e := range files {
			if e.Type().IsRegular() && strings.EqualFold(filepath.Ext(e.Name()), ".txt") {
				f.Paths = append(f.Paths, filepath.Join(root, class, e.Name()))
				f.Labels = append(f.Labels, int64(c))
			}
		}
	}
	return f, nil
}

// Len returns the number of files.
func (f *TextFolder) Len() int { return len(f.Paths) }

// Get reads file i: X is nil, Label its class, Extra["text"] its contents
// (a string) and Extra["path"] the file. It returns an error naming the
// file when it cannot be read or is not valid UTF-8 (wrapping ErrCorrupt),
// and one wrapping ErrIndex when i is out of range.
func (f *TextFolder) Get(i int) (Item, error) {
	if i < 0 || i >= len(f.Paths) {
		return Item{}, indexErr("TextFolder.Get", i, len(f.Paths))
	}
	text, err := readText(f.Paths[i])
	if err != nil {
		return Item{}, err
	}
	return Item{Label: f.Labels[i], Extra: map[string]any{"text": text, "path": f.Paths[i]}}, nil
}

// Texts reads every file, in order: the corpus to build a tokenizer's
// vocabulary from. It returns the first error Get would.
func (f *TextFolder) Texts() ([]string, error) {
	out := make([]string, len(f.Paths))
	for i, p := range f.Paths {
		t, err := readText(p)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

func readText(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("data: text: %w", err)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("data: text %s: not valid UTF-8 (at byte %d): %w", path, invalidAt(b), ErrCorrupt)
	}
	return string(b), nil
}

// invalidAt returns the offset of the first invalid UTF-8 sequence in b.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// TextLines is a corpus of lines of text held in memory, one item per
// line: a language-modelling corpus, or sentences to classify with
// labels set afterwards.
type TextLines struct {
	Lines []string
	// Labels, when not nil, holds one label per line (Get's Label);
	// otherwise every label is 0.
	Labels []int64
}

// LoadTextLines reads path as UTF-8 text and keeps its non-blank lines
// (without their line endings, "\n" or "\r\n"). It returns an error
// naming the file when it cannot be read, and one wrapping ErrCorrupt
// naming the line of the first invalid UTF-8 sequence. Lines may be of
// any length.
func LoadTextLines(path string) (*TextLines, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: LoadTextLines: %w", err)
	}
	defer file.Close()
	t := &TextLines{}
	r := bufio.NewReader(file)
	for n := 1; ; n++ {
		line, err := r.ReadString('\n')
		if line != "" {
			if !utf8.ValidString(line) {
				return nil, fmt.Errorf("data: LoadTextLines %s: line %d is not valid UTF-8 (at byte %d of the line): %w",
					path, n, invalidAt([]byte(line)), ErrCorrupt)
			}
			line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
			if strings.TrimSpace(line) != "" {
				t.Lines = append(t.Lines, line)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("data: LoadTextLines %s: line %d: %w", path, n, err)
		}
	}
	return t, nil
}

// NewTextLines returns a corpus of the given lines (not copied).
func NewTextLines(lines []string) *TextLines { return &TextLines{Lines: lines} }

// Len returns the number of lines.
func (t *TextLines) Len() int { return len(t.Lines) }

// Get returns line i as an Item: X is nil, Extra["text"] the line, Label
// Labels[i] (0 without Labels). It returns an error wrapping ErrIndex when
// i is out of range.
func (t *TextLines) Get(i int) (Item, error) {
	if i < 0 || i >= len(t.Lines) {
		return Item{}, indexErr("TextLines.Get", i, len(t.Lines))
	}
	var label int64
	if i < len(t.Labels) {
		label = t.Labels[i]
	}
	return Item{Label: label, Extra: map[string]any{"text": t.Lines[i]}}, nil
}
