package data

// ModuleCacheFolder exposes moduleFolder to the tests.
var ModuleCacheFolder = moduleFolder
