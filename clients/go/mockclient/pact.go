package mockclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
)

// writeJSON writes document at path, merged with the document already there when merge is given. The
// writers of one path take turns under the lock file path.lock, deleted by its holder when it is done.
func writeJSON(path string, document Object, merge func(old, new Object) (Object, error)) (Object, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if merge != nil {
		if data, err := os.ReadFile(path); err == nil {
			var old Object
			if err := json.Unmarshal(data, &old); err != nil {
				return nil, fmt.Errorf("%s: not a JSON document: %v", path, err)
			}
			if document, err = merge(old, document); err != nil {
				return nil, err
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if err := replaceFile(path, document); err != nil {
		return nil, err
	}
	return document, nil
}

// replaceFile writes value at path as indented JSON, whole or not at all: written beside it first (path.tmp),
// then renamed over it.
func replaceFile(path string, value any) error {
	data, err := json.MarshalIndent(value, "", "  ")
	if err != nil {
		return err
	}
	temporary := path + ".tmp"
	if err := os.WriteFile(temporary, append(data, '\n'), 0o644); err != nil {
		os.Remove(temporary)
		return err
	}
	if err := os.Rename(temporary, path); err != nil {
		os.Remove(temporary)
		return err
	}
	return nil
}

// MergePacts is one pact of two of the same consumer and provider: the old interactions, then the new
// ones that differ (one whose description is taken but differs gets a numbered description), with the
// notes of metadata.idp-mockserver added up. It is the Python plugin's merge_pacts.
func MergePacts(old, new Object) (Object, error) {
	if !reflect.DeepEqual(old["consumer"], new["consumer"]) || !reflect.DeepEqual(old["provider"], new["provider"]) {
		return nil, fmt.Errorf("%v -> %v: the file holds a pact of %v -> %v",
			nameOf(new["consumer"]), nameOf(new["provider"]), nameOf(old["consumer"]), nameOf(old["provider"]))
	}
	same := func(item Object) string { // a V4 interaction's key says it; a V3 one is compared whole
		if key, ok := item["key"].(string); ok && key != "" {
			return key
		}
		rest := Object{}
		for k, v := range item {
			if k != "description" {
				rest[k] = v
			}
		}
		encoded, _ := json.Marshal(rest) // maps are encoded with sorted keys
		return string(encoded)
	}
	var interactions []any
	held, names := map[string]bool{}, map[string]bool{}
	oldItems, _ := old["interactions"].([]any)
	for _, raw := range oldItems {
		interactions = append(interactions, raw)
		if item, ok := raw.(Object); ok {
			held[same(item)] = true
			description, _ := item["description"].(string)
			names[description] = true
		}
	}
	newItems, _ := new["interactions"].([]any)
	for _, raw := range newItems {
		item, ok := raw.(Object)
		if !ok {
			continue
		}
		key := same(item)
		if held[key] {
			continue
		}
		held[key] = true
		base, _ := item["description"].(string)
		description := base
		for count := 2; names[description]; count++ {
			description = fmt.Sprintf("%s #%d", base, count)
		}
		if description != base {
			copied := Object{}
			for k, v := range item {
				copied[k] = v
			}
			copied["description"] = description
			item = copied
		}
		names[description] = true
		interactions = append(interactions, item)
	}
	newMetadata, _ := new["metadata"].(Object)
	oldMetadata, _ := old["metadata"].(Object)
	newNotes, _ := newMetadata["idp-mockserver"].(Object)
	before, _ := oldMetadata["idp-mockserver"].(Object)
	notes := Object{}
	for k, v := range newNotes {
		notes[k] = v
	}
	for _, key := range []string{"cut", "left_out"} {
		earlier, _ := before[key].([]any)
		later, _ := newNotes[key].([]any)
		notes[key] = append(append([]any{}, earlier...), later...)
	}
	notes["interactions"] = len(interactions)
	earlierCalls, _ := before["calls"].(float64)
	laterCalls, _ := newNotes["calls"].(float64)
	notes["calls"] = earlierCalls + laterCalls
	metadata := Object{}
	for k, v := range newMetadata {
		metadata[k] = v
	}
	metadata["idp-mockserver"] = notes
	merged := Object{}
	for k, v := range new {
		merged[k] = v
	}
	if interactions == nil {
		interactions = []any{}
	}
	merged["interactions"] = interactions
	merged["metadata"] = metadata
	return merged, nil
}

func nameOf(party any) any {
	if object, ok := party.(Object); ok {
		return object["name"]
	}
	return party
}
