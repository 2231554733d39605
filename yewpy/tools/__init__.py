"""Tools around the library: the command line, the scaling harness, the profile report, mpiexec."""
