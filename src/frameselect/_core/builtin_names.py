"""The names the built-in modules register, by kind, so listing a registry need not import them.

``tests/test_startup.py`` keeps this equal to what the modules register; after
adding or renaming a built-in part, paste the table its failure message
prints (:func:`frameselect.registry.registered_by_modules`).
"""

from __future__ import annotations

# fmt: off
BUILTIN_NAMES: dict[str, tuple[str, ...]] = {
    "selectors": ("aks", "bayes_grpo", "bolt", "dig", "dkts", "dpp", "dpp_diverse", "facility_location", "fixed_fps", "flexselect", "focus", "katna", "kcenter", "kmeans", "ktv", "markey", "maxinfo", "mdp3", "mgsampler", "mmr", "multires", "peek", "qca", "qframe", "random", "scenedetect_adaptive", "scenedetect_content", "stratified", "tass", "temporal_nms", "topk", "tsn", "tspo", "tstar", "uniform", "videotree", "vsls", "wfs"),
    "encoders": ("blip_itm", "clip", "color_histogram", "imagenet_label", "ocr_text", "open_clip", "siglip", "thumbnail"),
    "evaluators": ("answer_cost", "crossvid_acc", "cvbench_acc", "evidence_recall", "frame_precision", "frames", "hl_hit1", "hl_map", "iop", "iou", "kfs_bds", "kfs_bsr", "kfs_kfr", "kfs_shr", "kfs_ukss", "lvh_annd", "lvh_f1", "lvh_precision", "lvh_recall", "mc_accuracy", "mean_min_distance", "mlvu_m_avg", "mr_map", "mvu_eval_acc", "nextgqa_acc_gqa", "nextgqa_grounding", "ovo_bench", "query_relevance", "recall_at_iou", "redundancy", "representativeness", "selection_latency", "streamingbench", "videomme_v2_group"),
    "datasets": ("charades_sta", "crossvid", "cvbench", "egoschema", "haystack", "haystack_cross", "kfsbench", "lmms_eval", "local", "longvideobench", "lvhaystack", "mlvu", "mvu_eval", "nextgqa", "nextqa", "ovo_bench", "qvhighlights", "streamingbench", "tiny", "videomme", "videomme_v2"),
    "answerers": ("internvl", "label_ocr_reader", "label_reader", "llava_onevision", "ocr_reader", "openai_http", "oracle", "qwen2_5_vl", "qwen2_vl"),
    "routers": ("constant", "dig_query_type", "hybrid", "relevance_shape", "text_cue"),
    "streaming": ("kmeans_synopsis", "offline_adapter", "reservoir", "sieve_streaming", "sliding_window", "stream_kcenter", "threshold_keeper"),
}
# fmt: on
