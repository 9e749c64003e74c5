package storage

import (
	"cmp"
	"container/heap"
	"errors"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/johannesboyne/gofakes3"
)

// Bounds on how many entries of one directory a listing holds in memory at
// once; a directory with more is read again for the next ones.
const (
	minListBatch = 64
	maxListBatch = 10_000
	// readDirChunk is how many entries one ReadDir call returns.
	readDirChunk = 1024
)

// storedKey is an object found by walk.
type storedKey struct {
	key  string
	path string
}

// walk yields, in S3 order (byte-wise lexical), the keys in the bucket
// directory dir that start with prefix and sort after after (all when after
// is ""). It reads only the directory the prefix names and those below it.
// batch hints how many keys the caller wants; directories are read in
// batches of about that many entries so that memory stays bounded in a
// directory of millions of objects.
func (b *diskBackend) walk(dir, prefix, after string, batch int) iter.Seq2[storedKey, error] {
	return func(yield func(storedKey, error) bool) {
		// The prefix up to its last "/" names a directory; the rest
		// must start the names of the entries in it.
		base, namePrefix := "", prefix
		if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
			base, namePrefix = prefix[:i+1], prefix[i+1:]
			parts, err := keyComponents(prefix[:i])
			if err != nil {
				return // no stored key has such a prefix
			}
			dir = joinPath(dir, parts)
		}
		w := walker{after: after, batch: min(max(batch, minListBatch), maxListBatch), yield: yield}
		w.dir(dir, base, namePrefix)
	}
}

// walker holds the state of one walk.
type walker struct {
	after string
	batch int
	yield func(storedKey, error) bool
}

// dirEntry is an entry of a directory being listed. sortKey is its name, with
// "/" appended for a directory: every key below it starts with that, so
// sorting entries by sortKey sorts their keys in S3 order.
type dirEntry struct {
	sortKey string
	isDir   bool
}

// dir yields the keys below the directory path, whose key prefix is keyBase
// ("" or ending in "/"), from entries whose names start with namePrefix. It
// reports whether to go on.
func (w *walker) dir(path, keyBase, namePrefix string) bool {
	lower := "" // entries up to this sortKey are done
	for {
		entries, more, err := w.readDir(path, keyBase, namePrefix, lower)
		if err != nil {
			w.yield(storedKey{}, err)
			return false
		}
		for _, e := range entries {
			lower = e.sortKey
			p := filepath.Join(path, strings.TrimSuffix(e.sortKey, "/"))
			if e.isDir {
				if !w.dir(p, keyBase+e.sortKey, "") {
					return false
				}
				continue
			}
			if !w.yield(storedKey{key: keyBase + e.sortKey, path: p}, nil) {
				return false
			}
		}
		if !more {
			return true
		}
	}
}

// readDir returns, sorted, the first w.batch entries of the directory path
// after lower that may hold keys wanted, and whether there are more. A
// missing directory has none.
func (w *walker) readDir(path, keyBase, namePrefix, lower string) ([]dirEntry, bool, error) {
	d, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer d.Close()

	// kept is a max-heap of the smallest entries seen.
	var kept entryHeap
	more := false
	for {
		chunk, err := d.ReadDir(readDirChunk)
		for _, de := range chunk {
			e, ok := w.wanted(de, keyBase, namePrefix, lower)
			if !ok {
				continue
			}
			if len(kept) < w.batch {
				heap.Push(&kept, e)
				continue
			}
			more = true
			if e.sortKey < kept[0].sortKey {
				kept[0] = e
				heap.Fix(&kept, 0)
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(chunk) == 0) {
			break
		}
		if errors.Is(err, fs.ErrNotExist) {
			break // removed while being read
		}
		if err != nil {
			return nil, false, err
		}
	}
	slices.SortFunc(kept, func(x, y dirEntry) int { return cmp.Compare(x.sortKey, y.sortKey) })
	return kept, more, nil
}

// wanted turns a directory entry into a dirEntry and reports whether it may
// hold keys the walk wants. Only regular files and directories whose names
// are valid key components are objects or hold them.
func (w *walker) wanted(de fs.DirEntry, keyBase, namePrefix, lower string) (dirEntry, bool) {
	name := de.Name()
	if !strings.HasPrefix(name, namePrefix) {
		return dirEntry{}, false
	}
	if _, err := keyComponents(name); err != nil {
		return dirEntry{}, false
	}
	e := dirEntry{sortKey: name}
	switch {
	case de.IsDir():
		e.isDir = true
		e.sortKey += "/"
		// Every key below starts with sub; skip the directory when all
		// of them sort before w.after.
		sub := keyBase + e.sortKey
		if w.after != "" && sub < w.after && !strings.HasPrefix(w.after, sub) {
			return dirEntry{}, false
		}
	case de.Type().IsRegular():
		if w.after != "" && keyBase+name <= w.after {
			return dirEntry{}, false
		}
	default:
		return dirEntry{}, false
	}
	if lower != "" && e.sortKey <= lower {
		return dirEntry{}, false
	}
	return e, true
}

// entryHeap is a max-heap of directory entries by sortKey.
type entryHeap []dirEntry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].sortKey > h[j].sortKey }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(dirEntry)) }
func (h *entryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ListBucket implements gofakes3.Backend: the keys matching prefix, in S3
// order, after page.Marker, at most page.MaxKeys of them (keys and common
// prefixes together).
func (b *diskBackend) ListBucket(bucket string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	dir, err := b.bucketDir(bucket)
	if err != nil {
		return nil, err
	}
	if prefix == nil {
		prefix = &gofakes3.Prefix{}
	}
	after := ""
	if page.HasMarker {
		after = page.Marker
	}

	objects := gofakes3.NewObjectList()
	var (
		count      int64
		lastPrefix string // the last common prefix added
		full       bool   // MaxKeys reached: looking for one more
		nextMarker string
	)
	for sk, err := range b.walk(dir, walkPrefix(prefix), after, int(page.MaxKeys)+1) {
		if err != nil {
			return nil, err
		}
		var match gofakes3.PrefixMatch
		if !prefix.Match(sk.key, &match) {
			continue
		}
		inLastPrefix := match.CommonPrefix && lastPrefix != "" && match.MatchedPart == lastPrefix
		if full {
			if inLastPrefix {
				// Rolled up into the prefix already returned: the
				// next page must start after it.
				nextMarker = sk.key
				continue
			}
			objects.IsTruncated = true
			objects.NextMarker = nextMarker
			break
		}
		switch {
		case inLastPrefix:
			continue
		case match.CommonPrefix:
			objects.AddPrefix(match.MatchedPart)
			lastPrefix = match.MatchedPart
		default:
			content, err := listedContent(sk)
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted meanwhile
			}
			if err != nil {
				return nil, err
			}
			objects.Add(content)
		}
		count++
		if page.MaxKeys > 0 && count >= page.MaxKeys {
			full, nextMarker = true, sk.key
		}
	}
	return objects, nil
}

// walkPrefix returns a prefix of every key prefix.Match accepts. With a
// delimiter Match ignores leading delimiters; keys never start with "/", so
// only that delimiter keeps the prefix usable.
func walkPrefix(prefix *gofakes3.Prefix) string {
	switch {
	case !prefix.HasPrefix:
		return ""
	case !prefix.HasDelimiter:
		return prefix.Prefix
	case prefix.Delimiter == "/":
		return strings.TrimLeft(prefix.Prefix, "/")
	default:
		return ""
	}
}

// listedContent describes the object sk for a listing. A file that is not a
// valid object is listed with the size and time of the file, so that it can
// be deleted.
func listedContent(sk storedKey) (*gofakes3.Content, error) {
	f, err := os.Open(sk.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	h, err := readObjectHeader(f, fi.Size())
	if err != nil {
		return &gofakes3.Content{
			Key:          sk.key,
			Size:         fi.Size(),
			LastModified: gofakes3.NewContentTime(fi.ModTime()),
		}, nil
	}
	return &gofakes3.Content{
		Key:          sk.key,
		ETag:         gofakes3.FormatETag(h.md5[:]),
		Size:         h.size,
		LastModified: gofakes3.NewContentTime(h.modified),
	}, nil
}
