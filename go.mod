module github.com/kiln-ml/kiln

go 1.26
