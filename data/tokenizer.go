package data

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/kiln-ml/kiln/tensor"
)

// Tokenizer turns text into token ids and back. Ids are in [0,
// VocabSize()); every Tokenizer of this package reserves PadID for padding
// and UnknownID for text outside its vocabulary.
type Tokenizer interface {
	Encode(text string) []int
	Decode(ids []int) string
	VocabSize() int
}

// The special tokens of the package's tokenizers: ids and spellings.
const (
	PadID        = 0
	UnknownID    = 1
	PadToken     = "<pad>"
	UnknownToken = "<unk>"
)

// vocabulary is the id ↔ token table the tokenizers share.
type vocabulary struct {
	tokens []string
	ids    map[string]int
}

// buildVocabulary returns the specials followed by the tokens counted,
// most frequent first (ties in byte order), those seen fewer than
// minFreq times dropped, at most maxSize entries in all (0: no limit).
func buildVocabulary(op string, counts map[string]int, maxSize, minFreq int) vocabulary {
	if maxSize < 0 || maxSize == 1 {
		panic(&tensor.Error{Op: op, Msg: fmt.Sprintf("vocabulary limit %d must be 0 (none) or at least 2 (the special tokens)",
			maxSize), Err: tensor.ErrArgument})
	}
	words := make([]string, 0, len(counts))
	for w, n := range counts {
		if n >= max(minFreq, 1) && w != PadToken && w != UnknownToken {
			words = append(words, w)
		}
	}
	slices.SortFunc(words, func(a, b string) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	if maxSize > 0 && len(words) > maxSize-2 {
		words = words[:maxSize-2]
	}
	v := vocabulary{tokens: append([]string{PadToken, UnknownToken}, words...), ids: map[string]int{}}
	for i, w := range v.tokens {
		v.ids[w] = i
	}
	return v
}

func (v *vocabulary) id(tok string) int {
	if i, ok := v.ids[tok]; ok {
		return i
	}
	return UnknownID
}

func (v *vocabulary) token(id int) string {
	if id < 0 || id >= len(v.tokens) {
		return UnknownToken
	}
	return v.tokens[id]
}

// CharTokenizer encodes text one character (Unicode code point) per
// token, as character-level language models read it.
type CharTokenizer struct{ vocab vocabulary }

// NewCharTokenizer builds a character vocabulary from corpus: PadToken,
// UnknownToken, then the characters by decreasing frequency (ties by code
// point), at most maxVocab ids in all (0 means no limit). Characters left
// out encode as UnknownID. It panics with ErrArgument when maxVocab is
// negative or 1 (below the two special tokens).
func NewCharTokenizer(corpus []string, maxVocab int) *CharTokenizer {
	counts := map[string]int{}
	for _, s := range corpus {
		for _, r := range s {
			counts[string(r)]++
		}
	}
	return &CharTokenizer{buildVocabulary("data.NewCharTokenizer", counts, maxVocab, 1)}
}

// Encode returns one id per character of text; invalid UTF-8 bytes and
// characters outside the vocabulary are UnknownID.
func (t *CharTokenizer) Encode(text string) []int {
	ids := make([]int, 0, utf8.RuneCountInString(text))
	for _, r := range text {
		if r == utf8.RuneError {
			ids = append(ids, UnknownID)
			continue
		}
		ids = append(ids, t.vocab.id(string(r)))
	}
	return ids
}

// Decode concatenates the characters of ids, skipping PadID; UnknownID and
// ids out of range read as UnknownToken.
func (t *CharTokenizer) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		if id != PadID {
			b.WriteString(t.vocab.token(id))
		}
	}
	return b.String()
}

// VocabSize returns the number of ids, special tokens included.
func (t *CharTokenizer) VocabSize() int { return len(t.vocab.tokens) }

// Vocabulary returns the tokens by id (a copy).
func (t *CharTokenizer) Vocabulary() []string { return slices.Clone(t.vocab.tokens) }

// WordTokenizerConfig configures NewWordTokenizer. The zero value keeps
// every word, case-sensitive.
type WordTokenizerConfig struct {
	// MaxVocab limits the vocabulary to that many ids, the two special
	// tokens included, keeping the most frequent words; 0 means no limit.
	MaxVocab int `json:"max_vocab,omitempty"`
	// MinFreq drops words seen fewer times than this in the corpus.
	MinFreq int `json:"min_freq,omitempty"`
	// Lowercase folds text to lower case before splitting, when building
	// the vocabulary and when encoding.
	Lowercase bool `json:"lowercase,omitempty"`
}

// WordTokenizer encodes text one whitespace-separated word per token.
type WordTokenizer struct {
	cfg   WordTokenizerConfig
	vocab vocabulary
}

// NewWordTokenizer builds a word vocabulary from corpus (split on Unicode
// white space): PadToken, UnknownToken, then the words by decreasing
// frequency (ties in byte order), limited as cfg says. It panics with
// ErrArgument when cfg.MaxVocab is negative or 1.
func NewWordTokenizer(corpus []string, cfg WordTokenizerConfig) *WordTokenizer {
	t := &WordTokenizer{cfg: cfg}
	counts := map[string]int{}
	for _, s := range corpus {
		for _, w := range t.words(s) {
			counts[w]++
		}
	}
	t.vocab = buildVocabulary("data.NewWordTokenizer", counts, cfg.MaxVocab, cfg.MinFreq)
	return t
}

func (t *WordTokenizer) words(s string) []string {
	if t.cfg.Lowercase {
		s = strings.ToLower(s)
	}
	return strings.Fields(s)
}

// Encode returns one id per word of text, UnknownID for words outside the
// vocabulary.
func (t *WordTokenizer) Encode(text string) []int {
	words := t.words(text)
	ids := make([]int, len(words))
	for i, w := range words {
		ids[i] = t.vocab.id(w)
	}
	return ids
}

// Decode joins the words of ids with single spaces, skipping PadID;
// UnknownID and ids out of range read as UnknownToken.
func (t *WordTokenizer) Decode(ids []int) string {
	words := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != PadID {
			words = append(words, t.vocab.token(id))
		}
	}
	return strings.Join(words, " ")
}

// VocabSize returns the number of ids, special tokens included.
func (t *WordTokenizer) VocabSize() int { return len(t.vocab.tokens) }

// Vocabulary returns the words by id (a copy).
func (t *WordTokenizer) Vocabulary() []string { return slices.Clone(t.vocab.tokens) }

// PadSequences lays sequences of ids out as one row each of a [B, length]
// matrix, row-major: longer sequences are cut to length (keeping their
// end when truncateLeft is set, their start otherwise), shorter ones are
// followed by PadID. A length of 0 means that of the longest sequence. It
// returns the matrix and the length. It panics with ErrArgument for a
// negative length.
func PadSequences(seqs [][]int, length int, truncateLeft bool) ([]int64, int) {
	if length < 0 {
		panic(&tensor.Error{Op: "data.PadSequences", Msg: fmt.Sprintf("length %d is negative", length),
			Err: tensor.ErrArgument})
	}
	if length == 0 {
		for _, s := range seqs {
			length = max(length, len(s))
		}
	}
	out := make([]int64, len(seqs)*length) // PadID is 0
	for i, s := range seqs {
		if len(s) > length {
			if truncateLeft {
				s = s[len(s)-length:]
			} else {
				s = s[:length]
			}
		}
		for j, id := range s {
			out[i*length+j] = int64(id)
		}
	}
	return out, length
}

// TextBatcher is a Batcher for text items (those of TextFolder and
// TextLines, or any item with Extra["text"] a string): it encodes each
// text with Tokenizer and pads or truncates it to Length tokens (see
// PadSequences; 0 pads to the longest text of the batch). x is Int64 [B,
// Length] of token ids, PadID after the end of each text; y is Int64 [B]
// of the items' labels.
type TextBatcher struct {
	Tokenizer    Tokenizer
	Length       int
	TruncateLeft bool
}

// Batch implements Batcher; it returns an error naming the position of an
// item without a text, and for a nil Tokenizer or a negative Length.
func (b TextBatcher) Batch(items []Item, dev tensor.Device) (x, y *tensor.Tensor, err error) {
	if b.Tokenizer == nil || b.Length < 0 {
		return nil, nil, fmt.Errorf("data: TextBatcher: needs a Tokenizer and a Length ≥ 0 (got %v, %d)", b.Tokenizer, b.Length)
	}
	if len(items) == 0 {
		return nil, nil, fmt.Errorf("data: TextBatcher: no items")
	}
	seqs := make([][]int, len(items))
	labels := make([]int64, len(items))
	for k, it := range items {
		text, ok := it.Extra["text"].(string)
		if !ok {
			return nil, nil, fmt.Errorf("data: TextBatcher: item %d of the batch has no Extra[\"text\"] string", k)
		}
		seqs[k] = b.Tokenizer.Encode(text)
		labels[k] = it.Label
	}
	ids, length := PadSequences(seqs, b.Length, b.TruncateLeft)
	err = tensor.Try(func() {
		x = tensor.FromInt64s(dev, ids, len(items), length)
		y = tensor.FromInt64s(dev, labels, len(items))
	})
	if err != nil {
		x.Release()
		return nil, nil, err
	}
	return x, y, nil
}
