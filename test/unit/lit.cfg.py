# lit configuration that runs the gtest unit tests: every TEST() of every
# *Tests binary under <build>/test/unit counts as one lit test.
import os

import lit.formats

config.name = "Rewire-Unit"
config.suffixes = []
config.test_source_root = os.path.join(config.rewire_obj_root, "test", "unit")
config.test_exec_root = config.test_source_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
