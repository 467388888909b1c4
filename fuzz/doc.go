// Package fuzz holds the fuzz targets of Loci's on-disk formats.
package fuzz
