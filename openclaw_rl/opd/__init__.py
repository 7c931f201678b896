"""On-policy distillation with hindsight hints (OPD) and Combine (OPD + Binary RL).

* :mod:`.teacher` -- the hinted teacher context and teacher/student log-probs on the student's ids;
* :mod:`.advantages` -- OPD and Combine advantages, the Combine dispatch table;
* :mod:`.judge` -- the OPD and Combine turn judges for the judge loop;
* :mod:`.topk_loss` -- the ``--distill-topk K`` reverse-KL loss.

The hint judge itself is :mod:`openclaw_rl.judges.hints`.
"""
