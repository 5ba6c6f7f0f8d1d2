# LLVM lit configuration for the text-IR golden tests (test/ir/**/*.hir).
#
# Run through ctest (`lit.ir`), which passes
#   --param hetpass_opt=<path of the hetpass-opt binary>
#   --param llvm_bin=/usr/lib/llvm-16/bin
#   --param cuda=ON|OFF (whether the build has the cuda device)
# Each test file starts with `// RUN:` lines (MLIR style) and each case with `// Tests that ...`.
import os

import lit.formats

config.name = 'hetpass-ir'
config.suffixes = ['.hir']
config.test_format = lit.formats.ShTest(True)
config.test_source_root = os.path.dirname(__file__)

hetpass_opt = lit_config.params.get('hetpass_opt')
llvm_bin = lit_config.params.get('llvm_bin', '/usr/lib/llvm-16/bin')
if not hetpass_opt:
    lit_config.fatal('missing --param hetpass_opt=<path to hetpass-opt>')
# Temporary files (%t) go to the build tree, beside hetpass-opt, not into the sources.
config.test_exec_root = os.path.join(os.path.dirname(os.path.abspath(hetpass_opt)), 'test',
                                     'ir-lit')

# Whole words only (not inside paths or longer names).
def _word(name):
    return r'(?<![\w/.-])' + name + r'(?![\w/.-])'

# `REQUIRES: cuda` tests (the cuda device's code generators) need a build with it.
if lit_config.params.get('cuda', '0') in ('1', 'ON', 'TRUE'):
    config.available_features.add('cuda')

config.substitutions.append((_word('hetpass-opt'), hetpass_opt))
config.substitutions.append((_word('FileCheck'), os.path.join(llvm_bin, 'FileCheck')))
config.substitutions.append((_word('split-file'), os.path.join(llvm_bin, 'split-file')))
config.substitutions.append((_word('not'), os.path.join(llvm_bin, 'not')))
