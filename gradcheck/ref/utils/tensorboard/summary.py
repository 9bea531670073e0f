"""``torch.utils.tensorboard.summary.hparams``: the three summaries (experiment, session
start, session end) that TensorBoard's HParams dashboard reads, built from the
``tensorboard`` package's protocol buffers as torch builds them. Only this function needs
``tensorboard``; it is imported when called.
"""
from __future__ import annotations

from typing import Any

# the value field and data type of each accepted Python type, tried in this order (a bool is
# an int first, as in torch)
_KINDS = ((int, "number_value", "DATA_TYPE_FLOAT64"), (float, "number_value", "DATA_TYPE_FLOAT64"),
          (str, "string_value", "DATA_TYPE_STRING"), (bool, "bool_value", "DATA_TYPE_BOOL"))


def _check(hparam_dict: Any, metric_dict: Any, discrete: Any) -> dict:
    for name, value in (("hparam_dict", hparam_dict), ("metric_dict", metric_dict),
                        ("hparam_domain_discrete", discrete or {})):
        if not isinstance(value, dict):
            raise TypeError(f"parameter: {name} should be a dictionary, nothing logged.")
    discrete = discrete or {}
    for key, values in discrete.items():
        if key not in hparam_dict or not isinstance(values, list) or not all(
                isinstance(v, type(hparam_dict[key])) for v in values):
            raise TypeError(f"parameter: hparam_domain_discrete[{key}] should be a list of same "
                            f"type as hparam_dict[{key}].")
    return discrete


def _summary(tag: str, **content: Any) -> Any:
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    data = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content)
    plugin = SummaryMetadata.PluginData(plugin_name=metadata.PLUGIN_NAME,
                                        content=data.SerializeToString())
    return Summary(value=[Summary.Value(tag=tag, metadata=SummaryMetadata(plugin_data=plugin))])


def _info(start: Any, name: str, value: Any, discrete: dict) -> Any:
    """Record one hyperparameter in the session start; its HParamInfo for the experiment."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams.api_pb2 import DataType, HParamInfo

    from gradcheck.ref.tensors import Tensor

    if isinstance(value, Tensor):
        start.hparams[name].number_value = value.detach().numpy().reshape(-1)[0]
        return HParamInfo(name=name, type=DataType.Value("DATA_TYPE_FLOAT64"))
    for kind, field, data_type in _KINDS:
        if isinstance(value, kind):
            setattr(start.hparams[name], field, value)
            domain = None if name not in discrete else struct_pb2.ListValue(
                values=[struct_pb2.Value(**{field: d}) for d in discrete[name]])
            return HParamInfo(name=name, type=DataType.Value(data_type), domain_discrete=domain)
    raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")


def hparams(hparam_dict: dict, metric_dict: dict,
            hparam_domain_discrete: dict | None = None) -> tuple:
    """(experiment, session start, session end) summaries for one run's hyperparameters
    and the metric tags it reports."""
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.api_pb2 import Experiment, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.plugin_data_pb2 import SessionEndInfo, SessionStartInfo

    discrete = _check(hparam_dict, metric_dict, hparam_domain_discrete)
    start = SessionStartInfo()
    infos = [_info(start, name, value, discrete)
             for name, value in hparam_dict.items() if value is not None]
    experiment = Experiment(hparam_infos=infos,
                            metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    end = SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))
    return (_summary(metadata.EXPERIMENT_TAG, experiment=experiment),
            _summary(metadata.SESSION_START_INFO_TAG, session_start_info=start),
            _summary(metadata.SESSION_END_INFO_TAG, session_end_info=end))
