-- job_submit.lua: hold every job submitted to huitian's partition, so that
-- Slurm's own scheduler never starts one by itself; `huitian slurm` sets its
-- node list and GPUs to huitian's plan and releases it.
--
-- Install: copy next to slurm.conf and set JobSubmitPlugins=lua there
-- (`scontrol reconfigure`). Change PARTITION if huitian manages another
-- partition (huitian slurm --partition).
local PARTITION = "huitian"

function slurm_job_submit(job_desc, part_list, submit_uid)
  if job_desc.partition == PARTITION then
    -- Priority 0 holds the job (Reason=JobHeldUser); huitian releases it.
    job_desc.priority = 0
  end
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  -- A user moving a job into the partition is held too; huitian's own
  -- updates (node list, GPUs, AdminComment) pass unchanged.
  if job_desc.partition == PARTITION and job_rec.partition ~= PARTITION then
    job_desc.priority = 0
  end
  return slurm.SUCCESS
end
