module github.com/kiln-ml/kiln

go 1.26

require github.com/traefik/yaegi v0.16.1
