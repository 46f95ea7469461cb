"""The validation appendix: the floors beside published measurements."""
