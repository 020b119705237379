"""Progress recognised by the counter shapes of progress lines, not by one trainer's phrases.

The lines are real, copied from the public issue threads named beside them
(trainers and servers the corpus covers thinly: Keras, mmdet/mmengine,
detectron2, fairseq, LightGBM/XGBoost, DeepSpeed, YOLO, torchtitan, nanoGPT,
PaddlePaddle, verl, ESPnet, NeMo, SGLang, vLLM, llama.cpp). What makes each one
progress is its structure: a counter ``N/M`` or ``[N/M]`` with figures, a
counter word and its number with ``key: value`` / ``key=value`` pairs, a
row of numbers led by its counter, a server's throughput and usage figures.
Counter-examples are lines of the same kinds where the telling part differs:
an error that carries a counter, a month/day stamp, a configuration dump, a
notice between boosting rounds.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from eagle3tui.logs.eta import EtaTracker
from eagle3tui.logs.offline import classify_log
from eagle3tui.logs.progress import ProgressUpdate, parse_progress
from tests.conftest import log_verdict

# (thread, line as posted, kind of stage that printed it)
REAL_LINES: list[tuple[str, str, str]] = [
    ('https://github.com/inspirehep/magpie/issues/183',
     'Epoch 1/10', 'task'),
    ('https://github.com/inspirehep/magpie/issues/183',
     '6072/6072 [==============================] - 110s 18ms/step - loss: 0.6284 - top_k_categorical_accuracy: 1.0000 - val_loss: 0.5469 - val_top_k_categorical_accuracy: 1.0000', 'task'),
    ('https://github.com/keras-team/keras/issues/2937',
     '50000/50000 [==============================] - 678s - loss: 1.7646 - acc: 0.3460 - val_loss: 1.3379 - val_acc: 0.5161', 'task'),
    ('https://github.com/keras-team/tf-keras/issues/485',
     '32/32 [==============================] - 4s 116ms/step - sparse_categorical_accuracy: 0.2360', 'task'),
    ('https://github.com/xitu/gold-miner/pull/2326',
     '32/768 [>.............................] - ETA: 0s', 'task'),
    ('https://github.com/open-mmlab/mmdetection/issues/2672',
     '2020-05-08 18:56:16,649 - mmdet - INFO - Epoch [1][2400/7517]\tlr: 0.00125, eta: 4:33:09, time: 0.595, data_time: 0.032, memory: 6836, loss_rpn_cls: 0.0989, loss_rpn_bbox: 0.0477, loss_cls: 0.1939, acc: 93.4961, loss_bbox: 0.1484, loss: 0.4890', 'task'),
    ('https://github.com/open-mmlab/mmdetection/issues/4090',
     '2020-11-11 18:20:40,841 - mmdet - INFO - Epoch [1][1050/29317]\tlr: 2.000e-02, eta: 1 day, 18:57:37, time: 0.387, data_time: 0.008, memory: 3946, loss_rpn_cls: 0.1105, loss_rpn_bbox: 0.0975, loss_cls: 0.4957, acc: 91.4482, loss_bbox: 0.2994, loss: 1.0031', 'task'),
    ('https://github.com/open-mmlab/mmengine/pull/155',
     '04/21 21:03:53 - mmengine - INFO - Epoch(train) [1][10/90]  lr: 1.000e-02  eta: 0:00:25  time: 0.010  data_time: 0.000  memory: 0  loss: 11.4723', 'task'),
    ('https://github.com/open-mmlab/mmpretrain/issues/408',
     '2021-08-17 17:00:17,073 - mmcls - INFO - Epoch [1][100/5005]    lr: 1.000e-01, eta: 37 days, 5:46:17, time: 6.430, data_time: 5.762, memory: 3086, loss: 6.8864', 'task'),
    ('https://github.com/shaunyuan22/SODA-mmrotate/issues/16',
     '2024-04-12 09:11:31,106 - mmrotate - INFO - Epoch [1][1250/3912]        lr: 5.000e-03, eta: 3:55:18, time: 0.302, data_time: 0.005, memory: 3400, loss_cls: 0.9365, loss_bbox: 1.6119, loss: 2.5484, grad_norm: 3.4181', 'task'),
    ('https://github.com/facebookresearch/detectron2/issues/195',
     '[11/01 11:27:04 d2.utils.events]: eta: 8:05:12  iter: 1259  total_loss: 1.012  loss_cls: 0.714  loss_box_reg: 0.291  time: 0.3322  data_time: 0.0334  lr: 0.010000  max_mem: 3961M', 'task'),
    ('https://github.com/facebookresearch/detectron2/issues/3363',
     '[08/14 10:26:13 d2.utils.events]:  eta: 0:43:51  iter: 6319  total_loss: 0.4072  loss_cls: 0.06762  loss_box_reg: 0.05153  loss_mask: 0.1505  loss_rpn_cls: 0.05607  loss_rpn_loc: 0.07071  time: 0.4464  data_time: 0.0375  lr: 0.0003  max_mem: 1962M', 'task'),
    ('https://github.com/facebookresearch/maskrcnn-benchmark/issues/825',
     '2019-05-27 10:48:54,461 maskrcnn_benchmark.trainer INFO: eta: 0:17:37  iter: 87940  loss: 0.6097 (0.9191)  loss_classifier: 0.1472 (0.3151)  loss_box_reg: 0.0702 (0.1441)  loss_mask: 0.2618 (0.3238)  loss_objectness: 0.0190 (0.0683)  loss_rpn_box_reg: 0.0148 (0.0678)  time: 0.5063 (0.5132)  data: 0.0062 (0.0078)  lr: 0.000025  max mem: 4358', 'task'),
    ('https://github.com/facebookresearch/Detectron/issues/610',
     'json_stats: {"accuracy_cls": 1.000000, "eta": "0:21:51", "iter": 55080, "loss": 0.024404, "loss_bbox": 0.000645, "loss_cls": 0.001896, "lr": 0.000025, "mb_qsize": 64, "mem": 3084, "time": 0.266505}', 'task'),
    ('https://github.com/facebookresearch/fairseq/issues/940',
     '| epoch 001:    450 / 1891 loss=11.521, nll_loss=10.881, ppl=1886.05, wps=52922, ups=0.5, wpb=104928, bsz=5325, num_updates=445, lr=8.90889e-05, gnorm=1.543, clip=0%, oom=0, loss_scale=2.000, wall=882, train_wall=756', 'task'),
    ('https://github.com/facebookresearch/fairseq/issues/940',
     "| epoch 001 | valid on 'valid' subset | valid_loss 8.11425 | valid_nll_loss 6.8834 | valid_ppl 118.06 | num_updates 600", 'task'),
    ('https://github.com/facebookresearch/fairseq/issues/301',
     '| epoch 010  2000 / 8223 loss=1.27 (1.50), wps=962, wpb=908, bsz=32, lr=0.001, clip=100%, gnorm=2.1427', 'task'),
    ('https://github.com/facebookresearch/fairseq/issues/301',
     '| epoch 010 | train loss 1.44 | train ppl 2.72 | s/checkpoint    7747 | words/s    961 | words/batch    906 | bsz    32 | lr 0.001000 | clip 100% | gnorm 2.1113', 'task'),
    ('https://github.com/facebookresearch/fairseq/issues/514',
     '| epoch 008 | loss 6.326 | nll_loss 5.193 | ppl 36.58 | wps 12876 | ups 4.9 | wpb 2578 | bsz 108 | num_updates 21896 | lr 0.000213706 | gnorm 1.201 | clip 0% | oom 0 | wall 4634 | train_wall 4309', 'task'),
    ('https://github.com/facebookresearch/fairseq/issues/233',
     '{"epoch": 10, "loss": "3.180", "nll_loss": "1.417", "ppl": "2.67", "wps": 1671182, "ups": "2.7", "wpb": 617154, "bsz": 16625, "num_updates": 21497, "lr": 0.00030195283218121974, "gnorm": "0.291", "clip": "100%", "oom": 0.02712006326464158, "loss_scale": "8.000", "wall": 8285}', 'task'),
    ('https://github.com/lightgbm-org/LightGBM/issues/646',
     "[392]\tvalid_0's binary_error: 0.199585\tvalid_0's auc: 0.869714", 'task'),
    ('https://github.com/scikit-learn/scikit-learn/pull/12807',
     '[LightGBM] [Info] Iteration:1, valid_1 auc : 0.77191', 'task'),
    ('https://github.com/scikit-learn/scikit-learn/pull/12807',
     '[LightGBM] [Info] 3.704867 seconds elapsed, finished iteration 1', 'task'),
    ('https://github.com/lightgbm-org/LightGBM/pull/2963',
     "[3]:\tvalid's l2:0.000306984+0.000613968\tvalid's l1:0.000306984+0.000613968", 'task'),
    ('https://github.com/lightgbm-org/LightGBM/issues/2813',
     "[162]\tname0's multi_logloss: 0.330583", 'task'),
    ('https://github.com/dmlc/xgboost/issues/2777',
     '[56000]\teval-logloss:1.13739\ttrain-logloss:0.000317', 'task'),
    ('https://github.com/dmlc/xgboost/issues/5993',
     '[3]\tvalidation_0-auc:0.489583\tvalidation_0-logloss:0.862967\tvalidation_1-auc:0.663866\tvalidation_1-logloss:0.885026', 'task'),
    ('https://github.com/deepspeedai/DeepSpeed/issues/1825',
     '[2022-03-11 02:06:58,985] [INFO] [logging.py:69:log_dist] [Rank 0] step=40, skipped=2, lr=[5e-05], mom=[[0.9, 0.999]]', 'task'),
    ('https://github.com/deepspeedai/DeepSpeed/issues/1825',
     '[2022-03-11 02:06:58,985] [INFO] [timer.py:189:stop] 0/40, SamplesPerSec=83.48609168106144, MemAllocated=0.26GB, MaxMemAllocated=9.02GB', 'task'),
    ('https://github.com/deepspeedai/DeepSpeed/issues/3742',
     '[2023-07-25 21:01:20,125] [INFO] [timer.py:215:stop] epoch=0/micro_step=6/global_step=6, RunningAvgSamplesPerSec=7.920460284374241, CurrSamplesPerSec=6.861668477031963, MemAllocated=59.65GB, MaxMemAllocated=63.31GB', 'task'),
    ('https://github.com/deepspeedai/DeepSpeed/issues/3742',
     ' samples/sec: 6.699 | iteration        6/   10000 | elapsed time per iteration (ms): 4777.1 | learning rate: 3.725E-07 | approx flops per GPU: 97.0TFLOPS | lm_loss: 1.118582E+01 | number of skipped iterations:   0 | number of nan iterations:   0 |', 'task'),
    ('https://github.com/tdrussell/diffusion-pipe/issues/410',
     'steps: 1 loss: 0.0614 iter time (s): 531.283 samples/sec: 0.008', 'task'),
    ('https://github.com/ultralytics/yolov5/issues/2552',
     '      0/89     5.61G   0.07745    0.0277   0.01785     0.123         7       640    0.7966    0.3577    0.3942    0.1884   0.04524   0.01313  0.004035', 'task'),
    ('https://github.com/ultralytics/yolov5/issues/2552',
     '      7/89     5.61G   0.03593   0.01311  0.002465    0.0515         8       640     0.949    0.9141    0.9534    0.6555   0.02349  0.006383 0.0007743', 'task'),
    ('https://github.com/ultralytics/yolov5/issues/2965',
     '     0/299      5.2G      0.11    0.1612   0.03867    0.3099        28      1280:   1%|▌                                           | 1/78 [00:04<05:27,  4.26s/it]', 'task'),
    ('https://github.com/ultralytics/yolov5/pull/10314',
     '        0/1      22.4G    0.07281    0.08384    0.06359        199        640: 100%|██████████| 1849/1849 13:15', 'task'),
    ('https://github.com/pytorch/torchtitan/pull/2389',
     '[titan] 2026-02-24 19:46:17,508 - root - INFO - step:  4  loss:  7.62585  grad_norm: 26.6250  memory: 66.91GiB(37.51%)  tps: 10,050  tflops: 314.71  mfu: 13.99%', 'task'),
    ('https://github.com/pytorch/torchtitan/pull/1287',
     '[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 200  loss:  6.1384  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%', 'task'),
    ('https://github.com/karpathy/nanochat/pull/147',
     'step 00004/21400 (0.02%) | loss: 8.893647 | lrm: 1.00 | dt: 989.44ms | tok/sec: 529,882 | mfu: 74.13 | total time: 0.00m', 'task'),
    ('https://github.com/AI-Hypercomputer/maxtext/issues/8',
     'completed step: 15107, seconds: 2.167, TFLOP/s: 36.722, loss: 2.191', 'task'),
    ('https://github.com/karpathy/nanoGPT/issues/110',
     'iter 1631: loss 4.0863, time 561.94ms', 'task'),
    ('https://github.com/karpathy/nanoGPT/issues/178',
     'iter 10: loss 3.2202, time 893.76ms, mfu 16.68%', 'task'),
    ('https://github.com/karpathy/nanoGPT/issues/178',
     'step 250: train loss 1.5440, val loss 1.7220', 'task'),
    ('https://github.com/PaddlePaddle/PaddleSeg/pull/928',
     '2021-03-30 06:55:57 [INFO]\t[TRAIN] epoch: 1, iter: 20/500, loss: 2.0859, lr: 0.009657, batch_cost: 0.5344, reader_cost: 0.07273, ips: 3.7425 samples/sec | ETA 00:04:16', 'task'),
    ('https://github.com/PaddlePaddle/PaddleSeg/pull/792',
     '2021-01-19 07:02:41 [INFO]\t[TRAIN] epoch=1, iter=5/100, loss=2.8735, lr=0.009639, batch_cost=0.8913, reader_cost=0.2592 | ETA 00:01:24', 'task'),
    ('https://github.com/PaddlePaddle/PaddleOCR/issues/2083',
     '[2021/02/23 22:52:57] root INFO: epoch: [5/500], iter: 11550, lr: 0.001000, loss: 4.880471, acc: 0.598958, norm_edit_dis: 0.877949, reader_cost: 5.33854 s, batch_cost: 5.97875 s, samples: 960, ips: 16.05686', 'task'),
    ('https://github.com/PaddlePaddle/Paddle/issues/5473',
     "Pass 0, Batch 100, Cost 2.261713, {'classification_error_evaluator': 0.8359375}", 'task'),
    ('https://github.com/PaddlePaddle/PaddleX/issues/2884',
     '[02/04 22:46:24] ppdet.engine.callbacks INFO: Epoch: [0] [2087/7312] learning_rate: 0.000029 loss: 4.504654 loss_cls: 1.374781 loss_iou: 0.142509 loss_dfl: 0.800746 loss_mask: 0.949291 loss_l1: 0.369396 eta: 67 days, 10:28:48 batch_cost: 0.1664 data_cost: 0.0034 ips: 96.1758 images/s, max_mem_reserved: 42653 MB, max_mem_allocated: 31490 MB', 'task'),
    ('https://github.com/zhaochenyang20/Awesome-ML-SYS-Tutorial/issues/106',
     '(TaskRunner pid=87031) step:83 - global_seqlen/min:340538.000 - global_seqlen/max:369082.000 - actor/entropy_loss:0.317 - actor/kl_loss:0.024 - actor/pg_loss:0.000 - actor/grad_norm:0.006 - training/global_step:83.000 - training/epoch:2.000 - critic/score/mean:0.906', 'task'),
    ('https://github.com/verl-project/verl/issues/2060',
     'step:0 - val-aux/openai/gsm8k/reward/mean@1:0.565 - val-aux/openai/gsm8k/score/mean@1:0.565 - val-core/openai/gsm8k/acc/mean@1:0.508', 'task'),
    ('https://github.com/espnet/espnet/issues/3370',
     'iterations:57, train acc:0.440, train loss:616.408, train loss ctc:1156.613, train loss att:76.203,', 'task'),
    ('https://github.com/espnet/espnet/issues/2183',
     '[gpu01:0/2] 2020-07-19 08:49:04,080 (trainer:464) INFO: 1epoch:train:1-682batch: iter_time=2.878e-04, forward_time=0.134, loss=123.963, loss_att=77.448, loss_ctc=232.499, acc=0.013, backward_time=0.111, optim_step_time=0.030, lr_0=3.460e-06, train_time=1.816', 'task'),
    ('https://github.com/espnet/espnet/issues/4813',
     '7epoch results: [train] iter_time=0.002, forward_time=0.032, loss_ctc=17.181, loss_transducer=10.153, loss=15.307, backward_time=0.042, optim_step_time=0.037, optim0_lr0=4.951e-04, train_time=0.608', 'task'),
    ('https://github.com/NVIDIA-BioNeMo/bionemo-recipes/pull/740',
     'Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 | global_batch_size: 1 | global_step: 120 | reduced_train_loss: 1.233 | train_step_timing in s: 0.03146 | val_loss: 4.106', 'task'),
    ('https://github.com/NVIDIA/NeMo-Framework-Launcher/issues/55',
     'Epoch 0:   1%|          | 795/77225 [9:07:58<878:01:48, 41.36s/it, loss=3.1, v_num=, reduced_train_loss=3.090, global_step=794.0, consumed_samples=1.63e+6]', 'task'),
    ('https://github.com/NVIDIA-NeMo/Automodel/pull/3473',
     '2026-08-10 16:00:44 | INFO | root | step 8 | epoch 0 | loss 0.7839 | grad_norm 1.7024 | lr 1.00e-05 | mem 24.06 GiB | tps 31346.32(3918.29/gpu) | num_label_tokens 45579', 'task'),
    ('https://github.com/sgl-project/sglang/issues/938',
     'Decode batch. #running-req: 1010, #token: 55006, token usage: 0.93, gen throughput (token/s): 1397.13, #queue-req: 12279', 'service'),
    ('https://github.com/sgl-project/sglang/pull/22166',
     '[2026-04-05 20:02:51] Decode batch, #running-req: 32, #token: 11179, token usage: 0.08, cuda graph: True, gen throughput (token/s): 1635.11, #queue-req: 0', 'service'),
    ('https://github.com/sgl-project/sglang/pull/22166',
     '[2026-04-05 20:02:51] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, token usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 559.53', 'service'),
    ('https://github.com/sgl-project/sglang/issues/1612',
     '[16:43:29 TP0] Prefill batch. #new-seq: 4, #new-token: 8192, #cached-token: 291, cache hit rate: 2.76%, token usage: 0.04, #running-req: 1, #queue-req: 38', 'service'),
    ('https://github.com/vllm-project/vllm/issues/19680',
     'INFO 06-16 10:03:14 [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 tokens/s, Avg generation throughput: 29.2 tokens/s, Running: 10 reqs, Waiting: 4 reqs, GPU KV cache usage: 57.9%, Prefix cache hit rate: 40.5%', 'service'),
    ('https://github.com/vllm-project/vllm/issues/8719',
     'Sep 22 23:46:42 ml2-1-a100-1 vllm[361991]: INFO 09-22 23:46:42 metrics.py:351] Avg prompt throughput: 5902.0 tokens/s, Avg generation throughput: 230.6 tokens/s, Running: 16 reqs, Swapped: 0 reqs, Pending: 11 reqs, GPU KV cache usage: 87.1%, CPU KV cache usage: 0.0%.', 'service'),
    ('https://github.com/LMCache/LMCache/issues/3655',
     '(APIServer pid=1) INFO 06-13 11:03:35 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.49, Accepted throughput: 30.70 tokens/s, Drafted throughput: 61.80 tokens/s, Accepted: 307 tokens, Drafted: 618 tokens, Per-position acceptance rate: 0.699, 0.466, 0.325, Avg Draft acceptance rate: 49.7%', 'service'),
    ('https://github.com/ggml-org/llama.cpp/pull/23269',
     '[42027] 2.24.418.070 I slot print_timing: id  0 | task 970 | n_decoded =    136, tg =  11.90 t/s', 'service'),
    ('https://github.com/ggml-org/llama.cpp/issues/9013',
     'slot update_slots: id  0 | task 0 | prompt processing progress, n_past = 51, n_tokens = 51, progress = 1.000000', 'service'),
    ('https://github.com/ggml-org/llama.cpp/issues/9013',
     'llama_perf_context_print: prompt eval time =     927.17 ms /    49 tokens (   18.92 ms per token,    52.85 tokens per second)', 'service'),
    ('https://github.com/pytorch/torchchat/pull/849',
     'Time for inference 1: 0.89 sec total, 200 tokens, 223.93 tokens/sec, 4.47 ms/token', 'task'),
]


@pytest.mark.parametrize(("url", "line", "kind"), REAL_LINES, ids=[f"{u.split('github.com/')[1]}-{i}"
                                                                    for i, (u, _l, _k) in enumerate(REAL_LINES)])
def test_real_progress_line_is_progress(tmp_path: Path, url: str, line: str, kind: str) -> None:
    verdict, rules = log_verdict(tmp_path, line, kind)
    assert verdict == "progress", (url, line, verdict, rules)


def _p(line: str) -> ProgressUpdate:
    u = parse_progress(line.strip())
    assert u is not None, line
    return u


# Counters with a total: what the ETA is fed (n, total).
COUNTED = [
    # mmdet / mmengine / PaddleX: the inner counter of "[epoch][iter/total]"; a month/day stamp before
    # a time ("04/21 21:03:53", "02/04 22:46:24") is not it.
    ("https://github.com/open-mmlab/mmengine/pull/155",
     ("04/21 21:03:53 - mmengine - INFO - Epoch(train) [1][10/90]  lr: 1.000e-02  eta: 0:00:25  time: 0.010  "
     "data_time: 0.000  memory: 0  loss: 11.4723"), 10, 90),
    ("https://github.com/PaddlePaddle/PaddleX/issues/2884",
     ("[02/04 22:46:24] ppdet.engine.callbacks INFO: Epoch: [0] [2087/7312] learning_rate: 0.000029 loss: 4.504654 "
     "eta: 67 days, 10:28:48 batch_cost: 0.1664 data_cost: 0.0034 ips: 96.1758 images/s"), 2087, 7312),
    ("https://github.com/open-mmlab/mmdetection/issues/2672",
     ("2020-05-08 18:56:16,649 - mmdet - INFO - Epoch [1][2400/7517]\tlr: 0.00125, eta: 4:33:09, time: 0.595, "
     "data_time: 0.032, memory: 6836, loss: 0.4890"), 2400, 7517),
    # fairseq: "N / M" after "epoch 001:" in a key=value line.
    ("https://github.com/facebookresearch/fairseq/issues/940",
     ("| epoch 001:    450 / 1891 loss=11.521, nll_loss=10.881, ppl=1886.05, wps=52922, ups=0.5, wpb=104928, "
     "bsz=5325, num_updates=445, lr=8.90889e-05"), 450, 1891),
    ("https://github.com/facebookresearch/fairseq/issues/301",
     "| epoch 010  2000 / 8223 loss=1.27 (1.50), wps=962, wpb=908, bsz=32, lr=0.001, clip=100%, gnorm=2.1427",
     2000, 8223),
    # YOLO: a row of numbers led by "epoch/last epoch"; a bar's count after the bar.
    ("https://github.com/ultralytics/yolov5/issues/2552",
     ("      7/89     5.61G   0.03593   0.01311  0.002465    0.0515         8       640     0.949    0.9141    "
     "0.9534    0.6555   0.02349  0.006383 0.0007743"), 7, 89),
    ("https://github.com/ultralytics/yolov5/pull/10314",
     ("        0/1      22.4G    0.07281    0.08384    0.06359        199        640: 100%|██████████| 1849/1849 "
     "13:15"), 1849, 1849),
    ("https://github.com/NVIDIA-BioNeMo/bionemo-recipes/pull/740",
     ("Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 | global_batch_size: 1 | "
     "global_step: 120 | reduced_train_loss: 1.233"), 120, 149),
    ("https://github.com/karpathy/nanochat/pull/147",
     "step 00004/21400 (0.02%) | loss: 8.893647 | lrm: 1.00 | dt: 989.44ms | tok/sec: 529,882 | mfu: 74.13", 4, 21400),
]


@pytest.mark.parametrize(("url", "line", "n", "total"), COUNTED, ids=[u.split("github.com/")[1] for u, *_ in COUNTED])
def test_counter_with_total(url: str, line: str, n: int, total: int) -> None:
    u = _p(line)
    assert (u.n, u.total) == (n, total), url


# Counters without a total: a figure (the step, the round), never a fraction.
FIGURES = [
    ("https://github.com/facebookresearch/detectron2/issues/3363",  # "08/14" is the date, not 8 of 14
     ("[08/14 10:26:13 d2.utils.events]:  eta: 0:43:51  iter: 6319  total_loss: 0.4072  loss_cls: 0.06762  "
     "time: 0.4464  data_time: 0.0375  lr: 0.0003  max_mem: 1962M"), 6319, "iter"),
    ("https://github.com/pytorch/torchtitan/pull/2389",  # the counter is the last word of its key
     ("[titan] 2026-02-24 19:46:17,508 - root - INFO - step:  4  loss:  7.62585  grad_norm: 26.6250  "
     "memory: 66.91GiB(37.51%)  tps: 10,050  tflops: 314.71  mfu: 13.99%"), 4, "step"),
    ("https://github.com/AI-Hypercomputer/maxtext/issues/8",
     "completed step: 15107, seconds: 2.167, TFLOP/s: 36.722, loss: 2.191", 15107, "step"),
    ("https://github.com/scikit-learn/scikit-learn/pull/12807",  # elapsed time and the iteration it finished
     "[LightGBM] [Info] 3.704867 seconds elapsed, finished iteration 1", 1, "iteration"),
    ("https://github.com/lightgbm-org/LightGBM/pull/2963",  # cross-validation: a colon after the round, mean+std
     "[3]:\tvalid's l2:0.000306984+0.000613968\tvalid's l1:0.000306984+0.000613968", 3, "round"),
    ("https://github.com/PaddlePaddle/Paddle/issues/5473",  # a counter word, then a named decimal figure
     "Pass 0, Batch 100, Cost 2.261713, {'classification_error_evaluator': 0.8359375}", 100, "batch"),
    ("https://github.com/dmlc/xgboost/issues/240",  # a counter word and the time spent (corpus tune row xgboost-240-1)
     "boosting round 0, 1 sec elapsed", 0, "round"),
    ("https://github.com/deepspeedai/DeepSpeed/issues/1825",  # DeepSpeed's timer prints epoch/step: no total
     ("[2022-03-11 02:06:58,985] [INFO] [timer.py:189:stop] 0/40, SamplesPerSec=83.48609168106144, "
     "MemAllocated=0.26GB, MaxMemAllocated=9.02GB"), None, None),
]


@pytest.mark.parametrize(("url", "line", "n", "unit"), FIGURES, ids=[u.split("github.com/")[1] for u, *_ in FIGURES])
def test_counter_without_total_is_a_figure(url: str, line: str, n: int | None, unit: str | None) -> None:
    u = _p(line)
    assert u.total is None, url
    assert u.n == n, url
    if unit is not None:
        assert u.unit == unit, url


def test_remaining_time_in_days() -> None:
    # https://github.com/open-mmlab/mmdetection/issues/4090, https://github.com/open-mmlab/mmpretrain/issues/408
    u = _p("2020-11-11 18:20:40,841 - mmdet - INFO - Epoch [1][1050/29317]\tlr: 2.000e-02, eta: 1 day, 18:57:37, "
           "time: 0.387, data_time: 0.008, memory: 3946, loss: 1.0031")
    assert u.remaining_s == 86400 + 18 * 3600 + 57 * 60 + 37
    u = _p("2021-08-17 17:00:17,073 - mmcls - INFO - Epoch [1][100/5005]    lr: 1.000e-01, eta: 37 days, 5:46:17, "
           "time: 6.430, data_time: 5.762, memory: 3086, loss: 6.8864")
    assert u.remaining_s == 37 * 86400 + 5 * 3600 + 46 * 60 + 17


def test_rate_per_sec() -> None:
    # https://github.com/pytorch/torchchat/pull/849
    u = _p("Time for inference 1: 0.89 sec total, 200 tokens, 223.93 tokens/sec, 4.47 ms/token")
    assert u.rate == pytest.approx(223.93)
    assert u.unit == "tokens"


def test_eta_from_two_mmdet_lines() -> None:
    # https://github.com/open-mmlab/mmdetection/issues/2672: 50 iterations in the 30 s between the two lines.
    t = EtaTracker()
    t.feed(_p("2020-05-08 18:56:16,649 - mmdet - INFO - Epoch [1][2400/7517]\tlr: 0.00125, eta: 4:33:09, "
              "time: 0.595, data_time: 0.032, memory: 6836, loss: 0.4890"), now=1000.0)
    t.feed(_p("2020-05-08 18:56:46,439 - mmdet - INFO - Epoch [1][2450/7517]\tlr: 0.00125, eta: 4:32:41, "
              "time: 0.596, data_time: 0.031, memory: 6836, loss: 0.4794"), now=1030.0)
    assert t.eta is not None
    assert t.eta.time_per_item == pytest.approx(0.6)
    assert t.eta.remaining_s == pytest.approx((7517 - 2450) * 0.6)


def test_eta_from_fairseq_and_yolo_rows() -> None:
    # https://github.com/facebookresearch/fairseq/issues/940 (450 -> 500 of 1891 updates, 91 s apart on its wall clock)
    t = EtaTracker()
    t.feed(_p("| epoch 001:    450 / 1891 loss=11.521, nll_loss=10.881, ppl=1886.05, wps=52922, wall=882"), now=882.0)
    t.feed(_p("| epoch 001:    500 / 1891 loss=11.346, nll_loss=10.678, ppl=1637.83, wps=53351, wall=973"), now=973.0)
    assert t.eta is not None and t.eta.remaining_s == pytest.approx((1891 - 500) * 91 / 50)
    # https://github.com/ultralytics/yolov5/issues/2552: one row per epoch.
    t = EtaTracker()
    t.feed(_p("      1/89     5.61G   0.05729   0.01826  0.004725   0.08027         7       640    0.5863    0.7462"
              "    0.7054    0.3722   0.03981   0.00885  0.001732"), now=0.0)
    t.feed(_p("      2/89     5.61G    0.0494   0.01557  0.004011   0.06897         7       640    0.7492    0.8203"
              "    0.8298    0.4587   0.03411  0.006995  0.001755"), now=120.0)
    assert t.eta is not None and t.eta.remaining_s == pytest.approx(87 * 120.0)


def test_figure_without_total_does_not_replace_the_bar() -> None:
    # A detectron2 metrics line (its own "eta", no total) while a bar with a total is followed:
    # https://github.com/facebookresearch/detectron2/issues/195
    t = EtaTracker()
    t.feed(_p("Loading: 10%|█         | 10/100 [00:10<01:30,  1.00it/s]"), now=10.0)
    t.feed(_p("[11/01 11:27:04 d2.utils.events]: eta: 8:05:12  iter: 1259  total_loss: 1.012  loss_cls: 0.714  "
              "time: 0.3322  data_time: 0.0334  lr: 0.010000  max_mem: 3961M"), now=11.0)
    assert t.eta is not None and t.eta.remaining_s == pytest.approx(90.0)


def test_server_figures_from_vllm_and_sglang(tmp_path: Path) -> None:
    # https://github.com/vllm-project/vllm/issues/19680, https://github.com/sgl-project/sglang/issues/938
    log = tmp_path / "serve.log"
    log.write_text(
        "INFO 06-16 10:03:14 [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 tokens/s, Avg generation "
        "throughput: 29.2 tokens/s, Running: 10 reqs, Waiting: 4 reqs, GPU KV cache usage: 57.9%, Prefix cache "
        "hit rate: 40.5%\n")
    _, mon = classify_log(log, stage_kind="service")
    assert mon.figures["running_reqs"] == 10 and mon.figures["queued_reqs"] == 4
    assert mon.figures["kv_usage"] == pytest.approx(0.579)
    assert mon.figures["throughput_tok_s"] == pytest.approx(29.2)
    log.write_text("Decode batch. #running-req: 1010, #token: 55006, token usage: 0.93, gen throughput (token/s): "
                   "1397.13, #queue-req: 12279\n")
    _, mon = classify_log(log, stage_kind="service")
    assert mon.figures == {"running_reqs": 1010, "kv_usage": pytest.approx(0.93),
                           "throughput_tok_s": pytest.approx(1397.13), "queued_reqs": 12279}


# Lines that must stay what they are.
NOT_PROGRESS = [
    "04/21 21:03:52 - mmengine - INFO - Checkpoints will be saved to /work/out",  # a date, then no figure
    "  Total optimization steps = 1,000",  # a trainer's header: a setting
    "max_steps=100 num_train_epochs=3",
    "Saving checkpoint at step 500.",  # a counter alone in a sentence
    "Epoch 3 took 12.5 s",  # a decimal after an uncapitalised word is no named figure
    "Batch size 32, learning rate 0.001",
    "0/1 GPUs available",  # a fraction leading words, not a row of numbers
    "  3/4  5",  # too few columns for a table row
    "12/31 23:59 job started",
    "Time elapsed: 3s",  # time spent, no counter
]


@pytest.mark.parametrize("line", NOT_PROGRESS)
def test_not_progress(tmp_path: Path, line: str) -> None:
    assert parse_progress(line.strip()) is None or log_verdict(tmp_path, line)[0] != "progress", line
    assert log_verdict(tmp_path, line)[0] == "info", line


def test_error_with_a_counter_stays_fatal(tmp_path: Path) -> None:
    for line, rule in [
        ("RuntimeError: CUDA error: an illegal memory access was encountered (step 10/100)", "cuda-error"),
        ("[rank0]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error, iter 1200/5000",
         "nccl"),
        ("ERROR: step 10/100 failed: loss is nan", "step-failed"),
    ]:
        verdict, rules = log_verdict(tmp_path, line)
        assert verdict == "fatal" and rule in rules, (line, verdict, rules)


def test_progress_then_death_is_fatal(tmp_path: Path) -> None:
    # A YOLO row, then the kernel's kill; an mmdet line, then the OOM.
    for text in [
        "      7/89     5.61G   0.03593   0.01311  0.002465    0.0515         8       640\nKilled",
        ("2020-05-08 18:56:16,649 - mmdet - INFO - Epoch [1][2400/7517]\tlr: 0.00125, eta: 4:33:09\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),
    ]:
        assert log_verdict(tmp_path, text)[0] == "fatal", text


def test_notices_between_boosting_rounds_stay_notices(tmp_path: Path) -> None:
    # https://github.com/lightgbm-org/LightGBM/issues/2813: warnings between evaluation records.
    log = tmp_path / "gbm.log"
    log.write_text(
        "[LightGBM] [Warning] No further splits with positive gain, best gain: -inf\n"
        "[162]\tname0's multi_logloss: 0.330583\n"
        "[LightGBM] [Warning] No further splits with positive gain, best gain: -inf\n"
        "[163]\tname0's multi_logloss: 0.330464\n")
    events, mon = classify_log(log, progress_events=True)
    assert [(e.line, e.kind) for e in events] == [(1, "benign"), (2, "progress"), (3, "benign"), (4, "progress")]
    assert mon.progress is not None and mon.progress.n == 163


def _yolo_rows(first: int, last: int) -> str:
    return "".join(f"     {e:2d}/89     5.61G   0.03593   0.01311  0.002465    0.0515         8       640\n"
                   for e in range(first, last + 1))


@pytest.mark.parametrize("filler_lines", [10, 6000], ids=["small-block", "template-block"])
def test_table_rows_found_in_both_scans(tmp_path: Path, filler_lines: int) -> None:
    # No literal marks a row of numbers: the scan finds it by shape, in a small block
    # (bytes) and in a catch-up block of >= 256 KiB (line templates), the last row shown.
    filler = "".join(f'INFO:     127.0.0.1:5{i % 10000:04d} - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
                     for i in range(filler_lines))
    log = tmp_path / "train.log"
    log.write_text(filler + _yolo_rows(0, 7))
    assert (filler_lines < 100) == (log.stat().st_size < 256 * 1024)
    _, mon = classify_log(log)
    assert mon.progress is not None and (mon.progress.n, mon.progress.total) == (7, 89)


@pytest.mark.parametrize("hostile", [
    "Aa 1.1e" + "1" * 5000 + "x",  # a long run of digits before no rate unit
    "1" * 5000 + " s/x",
    "Batch 1, Cost 1." + "2" * 5000 + "x",
    " " * 40 + "1/2" + " 1" * 5000 + " x",  # a table row that turns out not to be one
    "eta: " + "1 days, " * 5000,
    "[1]:\t" + "a:1+" * 5000,
    "elapsed 1 " * 5000,
], ids=["digits-before-no-unit", "digits-before-s-slash", "long-decimal-figure", "row-that-is-not", "days",
        "cv-round", "elapsed"])
def test_hostile_inputs_stay_linear(hostile: str) -> None:
    t = time.perf_counter()
    parse_progress(hostile)
    assert time.perf_counter() - t < 0.5
