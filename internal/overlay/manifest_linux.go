package overlay

import (
	"bufio"
	"encoding/gob"
	"fmt"
	"os"
)

// loadManifest reads the manifest Start recorded (and Apply moved on).
func (o *Overlay) loadManifest() (Manifest, error) {
	f, err := os.Open(o.manifestPath())
	if err != nil {
		return nil, fmt.Errorf("overlay %s: manifest: %w", o.Name, err)
	}
	defer f.Close()
	var m Manifest
	if err := gob.NewDecoder(bufio.NewReader(f)).Decode(&m); err != nil {
		return nil, fmt.Errorf("overlay %s: manifest: %w", o.Name, err)
	}
	return m, nil
}
