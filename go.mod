module github.com/cordon-run/cordon

go 1.25.0

require github.com/sirupsen/logrus v1.9.4

require golang.org/x/sys v0.13.0 // indirect
