package spec

import (
	"fmt"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

var (
	workerTopKeys     = []string{"name", "description", "sandbox"}
	workerSandboxKeys = []string{"restrict", "readonly", "zones", "network", "limits"}
	workerSuffixes    = []string{".worker.yaml", ".worker.yml", ".yaml", ".yml"}
)

// LoadWorker reads a *.worker.yaml file. The worker's name defaults to the
// file's base name without ".worker.yaml" (or ".yaml").
func LoadWorker(path string) (*Worker, error) {
	data, err := readRegular(path, false)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot read worker file %s: %w", ErrInvalidConfig, path, err)
	}
	name := filepath.Base(path)
	for _, s := range workerSuffixes {
		if strings.HasSuffix(name, s) && len(name) > len(s) {
			name = strings.TrimSuffix(name, s)
			break
		}
	}
	return ParseWorker(data, name, path)
}

// ParseWorker parses a worker file held in memory. name is used when the
// file has no `name` key; source names the file in messages.
//
// Only name, description and sandbox are read at the top level; other keys
// (instructions, model, tools, ...) belong to the harness and are ignored,
// and so are YAML documents after the first. Inside `sandbox`, unknown keys
// are errors. A file without a sandbox section (or with `sandbox:` empty)
// is a pure function: Worker.Sandbox is nil.
func ParseWorker(data []byte, name, source string) (*Worker, error) {
	d := newDecoder()
	w := &Worker{Name: name, Source: source}
	top := d.fields(d.document(data, false), "", workerTopKeys, false)
	nameLine := 0
	if v := top["name"]; !isNull(v) {
		nameLine = v.Line
		if s, ok := d.str(v, "name"); ok {
			w.Name = s
		}
	}
	if !zoneNameRe().MatchString(w.Name) {
		d.fail("name", nameLine, fmt.Sprintf("%q is not a valid worker name", w.Name), zoneNameFix)
	}
	if v := top["description"]; !isNull(v) {
		d.str(v, "description")
	}
	if v := top["sandbox"]; !isNull(v) {
		w.Sandbox = d.workerRequest(v, "sandbox")
	}
	if err := d.result("worker", source); err != nil {
		return nil, err
	}
	return w, nil
}

// workerRequest decodes a worker's sandbox section.
func (d *decoder) workerRequest(n *yaml.Node, field string) *WorkerRequest {
	req := &WorkerRequest{}
	f := d.fields(n, field, workerSandboxKeys, true)
	if v := f["restrict"]; !isNull(v) {
		rf := sub(field, "restrict")
		if s, ok := d.str(v, rf); ok {
			if r, prob := cleanRestrict(s); prob != "" {
				d.fail(rf, v.Line, prob, "give a directory of the parent's workspace, absolute or relative to the parent's root")
			} else {
				req.Restrict = r
			}
		}
	}
	if v := f["readonly"]; !isNull(v) {
		req.Readonly, _ = d.boolean(v, sub(field, "readonly"))
	}
	zf := sub(field, "zones")
	if v := f["zones"]; !isNull(v) {
		req.Zones = []ZoneRequest{}
		seen := map[string]int{}
		for i, item := range d.seq(v, zf) {
			ef := index(zf, i)
			d.lines[ef] = item.Line
			zk := d.fields(item, ef, []string{"name", "mode"}, true)
			var z ZoneRequest
			if nv := zk["name"]; isNull(nv) {
				d.fail(sub(ef, "name"), item.Line, "is required", "name a zone of the parent, or workspace for its root")
				continue
			} else if s, ok := d.str(nv, sub(ef, "name")); !ok {
				continue
			} else if !zoneNameRe().MatchString(s) {
				d.fail(sub(ef, "name"), nv.Line, fmt.Sprintf("%q is not a valid zone name", s), zoneNameFix)
				continue
			} else {
				z.Name = s
			}
			if j, dup := seen[z.Name]; dup {
				d.fail(sub(ef, "name"), item.Line, fmt.Sprintf("zone %q is also asked for by %s", z.Name, index(zf, j)), "ask for each zone once")
				continue
			}
			seen[z.Name] = i
			if mv := zk["mode"]; !isNull(mv) {
				mf := sub(ef, "mode")
				if s, ok := d.str(mv, mf); ok {
					switch ZoneMode(s) {
					case ModeRO, ModeRW:
						z.Mode = ZoneMode(s)
					default:
						d.fail(mf, mv.Line, fmt.Sprintf("%q is not a zone mode", s), "write ro or rw, or leave mode out to keep the parent's")
						continue
					}
				}
			}
			if z.Mode == ModeRW && req.Readonly {
				d.fail(sub(ef, "mode"), d.line(sub(ef, "mode")), "rw contradicts readonly: true", "drop readonly: true, or ask for ro")
			}
			req.Zones = append(req.Zones, z)
		}
	}
	if v := f["network"]; !isNull(v) {
		if net, ok := d.network(v, sub(field, "network")); ok {
			req.Network = &net
		}
	}
	if v := f["limits"]; !isNull(v) {
		req.Limits = d.limits(v, sub(field, "limits"))
	}
	return req
}

// cleanRestrict checks a restrict path and cleans it; a relative path stays
// relative (to the parent's root, which only Derive knows).
func cleanRestrict(s string) (string, string) {
	if prob := pathProblem(s); prob != "" {
		return "", prob
	}
	p, prob := expandHome(s)
	if prob != "" {
		return "", prob
	}
	return filepath.Clean(p), ""
}
