module chronomad.test/goyamux

go 1.21

require github.com/hashicorp/yamux v0.1.1
