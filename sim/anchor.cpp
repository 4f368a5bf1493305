int rehearse_sim_anchor = 0;
