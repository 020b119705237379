"""The supervisor: the driver, its scheduler, launches, run records and the command protocol."""
