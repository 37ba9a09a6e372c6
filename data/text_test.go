package data_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/data"
	"github.com/kiln-ml/kiln/tensor"
)

func writeTextFolder(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for path, text := range map[string]string{
		"pos/b.txt":     "a fine film, a fine cast",
		"pos/a.TXT":     "loved it",
		"neg/1.txt":     "dull and slow",
		"neg/notes.md":  "ignored: not .txt",
		"stray.txt":     "ignored: not in a class folder",
		"empty/.keep":   "",
		"neg/2.txt":     "",
		"pos/naïve.txt": "naïve but fine",
	} {
		write(t, filepath.Join(root, path), []byte(text))
	}
	return root
}

func TestLoadTextFolder(t *testing.T) {
	root := writeTextFolder(t)
	f, err := data.LoadTextFolder(root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Classes, []string{"empty", "neg", "pos"}) {
		t.Errorf("Classes %v", f.Classes)
	}
	var names []string
	for _, p := range f.Paths {
		names = append(names, filepath.Base(p))
	}
	if !slices.Equal(names, []string{"1.txt", "2.txt", "a.TXT", "b.txt", "naïve.txt"}) ||
		!slices.Equal(f.Labels, []int64{1, 1, 2, 2, 2}) {
		t.Errorf("files %v labels %v", names, f.Labels)
	}
	it, err := f.Get(3)
	if err != nil {
		t.Fatal(err)
	}
	if it.Extra["text"] != "a fine film, a fine cast" || it.Label != 2 || it.X != nil {
		t.Errorf("Get(3) = %+v", it)
	}
	texts, err := f.Texts()
	if err != nil || len(texts) != 5 || texts[1] != "" {
		t.Errorf("Texts = %q, %v", texts, err)
	}
	if _, err := f.Get(5); !errors.Is(err, data.ErrIndex) {
		t.Errorf("Get(5): %v", err)
	}
	write(t, filepath.Join(root, "neg", "1.txt"), []byte("ok \xff\xfe bad"))
	if _, err := f.Get(0); !errors.Is(err, data.ErrCorrupt) || !strings.Contains(err.Error(), "1.txt") ||
		!strings.Contains(err.Error(), "byte 3") {
		t.Errorf("invalid UTF-8: %v", err)
	}
	os.Remove(filepath.Join(root, "neg", "2.txt"))
	if _, err := f.Get(1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("deleted file: %v", err)
	}
	if _, err := data.LoadTextFolder(filepath.Join(root, "pos")); err == nil || !strings.Contains(err.Error(), "no class") {
		t.Errorf("folder without sub-folders: %v", err)
	}
	if _, err := data.LoadTextFolder(filepath.Join(root, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: %v", err)
	}
}

func TestLoadTextLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "corpus.txt")
	write(t, path, []byte("first line\r\n\n   \nsecond, naïve\nlast without newline"))
	c, err := data.LoadTextLines(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Lines, []string{"first line", "second, naïve", "last without newline"}) {
		t.Errorf("Lines %q", c.Lines)
	}
	c.Labels = []int64{4, 5, 6}
	if it, _ := c.Get(1); it.Extra["text"] != "second, naïve" || it.Label != 5 {
		t.Errorf("Get(1) = %+v", it)
	}
	if _, err := c.Get(-1); !errors.Is(err, data.ErrIndex) {
		t.Errorf("Get(-1): %v", err)
	}
	write(t, path, []byte("good\nbad \xc3\n"))
	if _, err := data.LoadTextLines(path); !errors.Is(err, data.ErrCorrupt) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("invalid UTF-8 on line 2: %v", err)
	}
	if _, err := data.LoadTextLines(path + ".missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestTokenizers(t *testing.T) {
	corpus := []string{"the cat sat on the mat", "The dog sat", "a cat"}
	w := data.NewWordTokenizer(corpus, data.WordTokenizerConfig{})
	// counts: the 2, cat 2, sat 2, The 1, a 1, dog 1, mat 1, on 1
	want := []string{"<pad>", "<unk>", "cat", "sat", "the", "The", "a", "dog", "mat", "on"}
	if got := w.Vocabulary(); !slices.Equal(got, want) || w.VocabSize() != 10 {
		t.Errorf("word vocabulary %v", got)
	}
	if ids := w.Encode("the  cat\tate"); !slices.Equal(ids, []int{4, 2, data.UnknownID}) {
		t.Errorf("Encode = %v", ids)
	}
	if s := w.Decode([]int{4, 2, 1, 0, 0, 99}); s != "the cat <unk> <unk>" {
		t.Errorf("Decode = %q", s)
	}
	limited := data.NewWordTokenizer(corpus, data.WordTokenizerConfig{MaxVocab: 4, Lowercase: true})
	// lower-cased: the 3, cat 2, sat 2 → the limit keeps <pad> <unk> the cat
	if got := limited.Vocabulary(); !slices.Equal(got, []string{"<pad>", "<unk>", "the", "cat"}) {
		t.Errorf("limited vocabulary %v", got)
	}
	if ids := limited.Encode("THE Sat cat"); !slices.Equal(ids, []int{2, 1, 3}) {
		t.Errorf("limited Encode = %v", ids)
	}
	if got := data.NewWordTokenizer(corpus, data.WordTokenizerConfig{MinFreq: 2}).VocabSize(); got != 5 {
		t.Errorf("MinFreq 2 keeps %d ids, want 5", got)
	}

	c := data.NewCharTokenizer([]string{"abba", "naïve"}, 0)
	// a 3, b 2, e 1, n 1, v 1, ï 1
	if got := c.Vocabulary(); !slices.Equal(got, []string{"<pad>", "<unk>", "a", "b", "e", "n", "v", "ï"}) {
		t.Errorf("char vocabulary %v", got)
	}
	text := "naïve baby"
	ids := c.Encode(text)
	if !slices.Equal(ids, []int{5, 2, 7, 6, 4, data.UnknownID, 3, 2, 3, data.UnknownID}) {
		t.Errorf("char Encode = %v", ids)
	}
	if got := c.Decode(ids); got != "naïve<unk>bab<unk>" {
		t.Errorf("char Decode = %q", got)
	}
	if ids := c.Encode("a\xffb"); !slices.Equal(ids, []int{2, 1, 3}) {
		t.Errorf("invalid UTF-8 encodes as %v", ids)
	}
	if got := data.NewCharTokenizer([]string{"abba", "naïve"}, 3).Vocabulary(); !slices.Equal(got, []string{"<pad>", "<unk>", "a"}) {
		t.Errorf("char limit 3 %v", got)
	}
	var _ data.Tokenizer = c
	var _ data.Tokenizer = w
	for _, bad := range []func(){
		func() { data.NewCharTokenizer(nil, 1) },
		func() { data.NewWordTokenizer(nil, data.WordTokenizerConfig{MaxVocab: -1}) },
		func() { data.PadSequences(nil, -1, false) },
	} {
		if err := tensor.Try(bad); !errors.Is(err, tensor.ErrArgument) {
			t.Errorf("bad argument: %v, want ErrArgument", err)
		}
	}
}

func TestPadSequences(t *testing.T) {
	seqs := [][]int{{5, 6, 7, 8}, {9}, {}}
	for _, tc := range []struct {
		name   string
		length int
		left   bool
		want   []int64
		wantL  int
	}{
		{"longest", 0, false, []int64{5, 6, 7, 8, 9, 0, 0, 0, 0, 0, 0, 0}, 4},
		{"truncate right", 2, false, []int64{5, 6, 9, 0, 0, 0}, 2},
		{"truncate left", 2, true, []int64{7, 8, 9, 0, 0, 0}, 2},
		{"pad", 5, false, []int64{5, 6, 7, 8, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 5},
	} {
		got, l := data.PadSequences(seqs, tc.length, tc.left)
		if !slices.Equal(got, tc.want) || l != tc.wantL {
			t.Errorf("%s: %v (length %d), want %v (%d)", tc.name, got, l, tc.want, tc.wantL)
		}
	}
	if got, l := data.PadSequences(nil, 0, false); len(got) != 0 || l != 0 {
		t.Errorf("no sequences: %v, %d", got, l)
	}
}

// A text folder read by a DataLoader through a TextBatcher: token ids
// padded to Length, labels from the folders.
func TestTextBatcherLoader(t *testing.T) {
	f, err := data.LoadTextFolder(writeTextFolder(t))
	if err != nil {
		t.Fatal(err)
	}
	texts, _ := f.Texts()
	tok := data.NewWordTokenizer(texts, data.WordTokenizerConfig{Lowercase: true})
	loader, err := data.NewLoader(f, data.LoaderConfig{BatchSize: 2, Batcher: data.TextBatcher{Tokenizer: tok, Length: 3}})
	if err != nil {
		t.Fatal(err)
	}
	it := loader.Iter(context.Background(), 0)
	defer it.Close()
	var rows [][]int64
	var labels []int64
	for it.Next() {
		b := it.Batch()
		if s := b.X.Shape(); s[1] != 3 || b.X.DType() != tensor.Int64 {
			t.Errorf("x %v %v", s, b.X.DType())
		}
		x := b.X.Int64s()
		for i := 0; i < len(x); i += 3 {
			rows = append(rows, x[i:i+3])
		}
		labels = append(labels, b.Y.Int64s()...)
		b.Release()
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(labels, []int64{1, 1, 2, 2, 2}) || len(rows) != 5 {
		t.Fatalf("labels %v, %d rows", labels, len(rows))
	}
	if got := tok.Decode([]int{int(rows[0][0]), int(rows[0][1]), int(rows[0][2])}); got != "dull and slow" {
		t.Errorf("row 0 decodes to %q", got)
	}
	if !slices.Equal(rows[1], []int64{0, 0, 0}) {
		t.Errorf("empty text row %v, want padding", rows[1])
	}
	if got := tok.Decode([]int{int(rows[3][0]), int(rows[3][1]), int(rows[3][2])}); got != "a fine film," {
		t.Errorf("row 3 decodes to %q (truncated to 3 words)", got)
	}
	_, _, err = data.TextBatcher{Tokenizer: tok}.Batch([]data.Item{{Extra: map[string]any{"text": "x"}}, {}}, tensor.CPU())
	if err == nil || !strings.Contains(err.Error(), "item 1") {
		t.Errorf("item without text: %v", err)
	}
	if _, _, err := (data.TextBatcher{}).Batch([]data.Item{{}}, tensor.CPU()); err == nil {
		t.Error("TextBatcher without a Tokenizer did not fail")
	}
}
