"""``torch.fx.experimental._config``: the symbolic-shape flags with torch 2.13's defaults."""
from __future__ import annotations

import sys

from gradcheck.ref.compile_config import ConfigModule

_FLAGS = {
    "no_data_dependent_graph_break": False, "translation_validation": False,
    "translation_validation_timeout": 600000, "translation_validation_no_bisect": False,
    "check_shape_env_recorded_events": False, "extended_debug_guard_added": None,
    "extended_debug_create_symbol": None, "extended_debug_cpp": False,
    "extended_debug_current_loc": False, "print_specializations": False,
    "inject_EVALUATE_EXPR_flip_equality_TESTING_ONLY": False,
    "validate_shape_env_version_key": False, "symbol_guard_limit_before_specialize": None,
    "use_duck_shape": True, "meta_nonzero_assume_all_nonzero": False,
    "backed_size_oblivious": False, "unify_view_symbols_bso_meta": False,
    "skip_dtype_check_in_meta_registrations": False, "enrich_profiler_metadata": False,
    "soft_pending_unbacked_not_found_error": False, "aggressive_guard_free_semantics": 0,
}
sys.modules[__name__] = ConfigModule("torch.fx.experimental._config", _FLAGS, {})
